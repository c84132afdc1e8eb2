package local

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/atomicfile"
	"github.com/flow-run/flow/runner/record"
)

// writeInvocation keeps the run's invocation in its directory, without
// the values of secret variables; an invocation that asks for nothing
// removes the file.
func (x *run) writeInvocation() error {
	v := x.opts.Invocation
	path := filepath.Join(x.dir, record.InvocationFile)
	if v.IsZero() {
		if err := x.rec.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", record.InvocationFile, err)
		}
		return nil
	}
	v.Env = slices.DeleteFunc(slices.Clone(v.Env), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return config.IsSecretName(name, x.wf.Secrets)
	})
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: %w", record.InvocationFile, err)
	}
	if err := atomicfile.Replace(x.rec, path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", record.InvocationFile, err)
	}
	return nil
}
