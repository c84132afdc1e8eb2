// Command floor is the floor of any durable workflow runner: for each of
// N steps it spawns `sh -c true`, waits for it, and appends one JSON line
// recording the step to a file, synced before the next step starts.
// Nothing a runner that keeps a crash-proof record can do per step is
// cheaper than this, so flow's per-step cost is measured against it.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

type record struct {
	Seq      int    `json:"seq"`
	At       string `json:"at"`
	Step     string `json:"step"`
	ExitCode int    `json:"exit_code"`
}

func main() {
	n := flag.Int("n", 100, "number of steps")
	dir := flag.String("dir", "", "directory for the record (default: a new temporary directory, removed at exit)")
	flag.Parse()
	if err := run(*n, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

func run(n int, dir string) error {
	if dir == "" {
		d, err := os.MkdirTemp("", "floor-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, "events.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	for i := 1; i <= n; i++ {
		cmd := exec.Command("sh", "-c", "true")
		code := 0
		if err := cmd.Run(); err != nil {
			ee, ok := err.(*exec.ExitError)
			if !ok {
				return fmt.Errorf("step %d: %w", i, err)
			}
			code = ee.ExitCode()
		}
		b, err := json.Marshal(record{Seq: i, At: time.Now().UTC().Format(time.RFC3339Nano), Step: fmt.Sprintf("s%d", i), ExitCode: code})
		if err != nil {
			return err
		}
		if _, err := f.Write(append(b, '\n')); err != nil {
			return fmt.Errorf("step %d: append: %w", i, err)
		}
		if err := f.Sync(); err != nil {
			return fmt.Errorf("step %d: sync: %w", i, err)
		}
	}
	return nil
}
