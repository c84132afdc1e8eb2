package local

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/internal/atomicfile"
	"github.com/flow-run/flow/runner/core"
)

// agent_orchestrator's memory: a session of its format may list, in its
// report, memory_updates — entries {scope, section, entry} — that are
// appended to the AGENTS.md of the directory scope names (default ".",
// the repository), under "## section" (default Notes), as "- entry".
// An entry already there is skipped; one its quality filter deems of
// low value (too short, too long, a line number, a description of what
// code does) is refused; a scope that is not a directory inside the
// repository is refused. The files are written following no link.

// EvMemoryUpdated records an entry written into an AGENTS.md.
const EvMemoryUpdated = "memory_updated"

// MemoryUpdated is the data of EvMemoryUpdated.
type MemoryUpdated struct {
	Scope   string `json:"scope"`
	Section string `json:"section"`
	Entry   string `json:"entry"`
	// File is the AGENTS.md written, relative to the repository.
	File string `json:"file"`
}

// memoryFile is the file of a directory's memory.
const memoryFile = "AGENTS.md"

// memoryTemplate starts a new memory file.
const memoryTemplate = "# AGENTS.md\n\n## Gotchas\n"

// lowValue returns the patterns of entries agent_orchestrator's quality
// filter refuses, matched against the entry lowercased, without its
// "- ". They are compiled on first use, not by every flow command.
var lowValue = sync.OnceValue(func() []*regexp.Regexp {
	var out []*regexp.Regexp
	for _, p := range []string{
		`line \d+`,
		`:\d+\b`,
		`^this (?:file|module|class|function) (?:is|does|handles|manages|contains)`,
		`^handles? `, `^manages? `, `^contains? `, `^defines? `, `^implements? `, `^provides? `,
		`^main (?:entry|file|module)`,
		`directory (?:for|contains|holds)`,
		`^the \w+ (?:is|are) responsible for`,
		`^used (?:for|to) `,
		`uses? (?:dataclass|enum|typing|logging|json)`,
		`follows? (?:the )?\w+ pattern`,
		`^important`, `^note:`, `^key `, `^core `, `^central `,
	} {
		out = append(out, regexp.MustCompile(p))
	}
	return out
})

// memoryUpdate is one entry of a report's memory_updates.
type memoryUpdate struct {
	scope, section, entry string
}

// memoryUpdates reads the memory_updates of a report: entries that are
// not objects are skipped; a missing scope is ".", a missing section
// Notes.
func memoryUpdates(report json.RawMessage) []memoryUpdate {
	var r struct {
		Updates []json.RawMessage `json:"memory_updates"`
	}
	if len(report) == 0 || json.Unmarshal(report, &r) != nil {
		return nil
	}
	var out []memoryUpdate
	for _, raw := range r.Updates {
		var m map[string]any
		if json.Unmarshal(raw, &m) != nil || m == nil {
			continue
		}
		u := memoryUpdate{scope: ".", section: "Notes"}
		for k, dst := range map[string]*string{"scope": &u.scope, "section": &u.section, "entry": &u.entry} {
			switch v := m[k].(type) {
			case nil:
			case string:
				*dst = v
			default:
				b, _ := json.Marshal(v)
				*dst = string(b)
			}
		}
		out = append(out, u)
	}
	return out
}

// lowValueEntry says why an entry is of low value, or "".
func lowValueEntry(entry string) string {
	n := strings.ToLower(strings.TrimSpace(entry))
	n = strings.TrimPrefix(n, "- ")
	for _, re := range lowValue() {
		if re.MatchString(n) {
			return "it matches the low-value pattern " + re.String()
		}
	}
	switch l := utf8.RuneCountInString(n); {
	case l < 15:
		return "it is too short to be actionable"
	case l > 150:
		return "it is too long for a memory (it belongs in the documentation)"
	}
	return ""
}

// applyMemory writes the memory_updates of a session's report, for a
// workflow that follows agent_orchestrator's contract: each entry
// written is a memory_updated event, each refused a warning.
func (x *run) applyMemory(in core.SessionDone) {
	if !x.orchestrated() || in.Interrupted {
		return
	}
	for _, u := range memoryUpdates(in.Outcome.Report) {
		file, written, err := writeMemory(x.rec, x.opts.Repo, u)
		switch {
		case err != nil:
			x.warn(in.Step, fmt.Sprintf("memory update (scope %q, section %q) not written: %v", u.scope, u.section, err))
		case written:
			e := newEvent(x.r.Clock.Now(), EvMemoryUpdated, in.Step, MemoryUpdated{Scope: u.scope, Section: u.section, Entry: u.entry, File: file})
			x.emit(e)
			x.printf("%s: memory: %s ## %s: %s\n", in.Step, file, u.section, oneLine(u.entry))
		}
	}
}

// oneLine shortens an entry for a line of progress.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 80 {
		return string(r[:79]) + "…"
	}
	return s
}

// writeMemory applies one memory update to repo through fsys (which on
// the real disk follows no link): it returns the file, relative to
// repo, and whether it was written (an entry already there is not).
func writeMemory(fsys afero.Fs, repo string, u memoryUpdate) (string, bool, error) {
	if why := lowValueEntry(u.entry); why != "" {
		return "", false, errors.New("refused: " + why)
	}
	scope := filepath.Clean(filepath.FromSlash(u.scope))
	if u.scope == "" {
		scope = "."
	}
	if filepath.IsAbs(scope) || !filepath.IsLocal(scope) && scope != "." {
		return "", false, fmt.Errorf("scope %q leads out of the repository", u.scope)
	}
	dir := filepath.Join(repo, scope)
	fi, err := lstat(fsys, dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", false, fmt.Errorf("scope %q is no directory of the repository", u.scope)
	case err != nil:
		return "", false, fmt.Errorf("scope %q: %w", u.scope, err)
	case !fi.IsDir():
		return "", false, fmt.Errorf("scope %q is no directory of the repository", u.scope)
	}
	path := filepath.Join(dir, memoryFile)
	rel := filepath.ToSlash(filepath.Join(scope, memoryFile))
	b, err := afero.ReadFile(fsys, path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		b = []byte(memoryTemplate)
		if err := atomicfile.Replace(fsys, path, b, 0o644); err != nil {
			return "", false, fmt.Errorf("create %s: %w", rel, err)
		}
	case err != nil:
		return "", false, fmt.Errorf("read %s: %w", rel, err)
	}
	content, changed := addMemoryEntry(string(b), u.section, u.entry)
	if !changed {
		return rel, false, nil
	}
	if err := atomicfile.Replace(fsys, path, []byte(content), 0o644); err != nil {
		return "", false, fmt.Errorf("write %s: %w", rel, err)
	}
	return rel, true, nil
}

// lstat stats path without following a last link, where fsys can.
func lstat(fsys afero.Fs, path string) (fs.FileInfo, error) {
	if l, ok := fsys.(afero.Lstater); ok {
		fi, _, err := l.LstatIfPossible(path)
		return fi, err
	}
	return fsys.Stat(path)
}

// addMemoryEntry adds "- entry" under "## section" of a memory file's
// content, as agent_orchestrator's memory module does: at the end of
// the section, before the next "## " heading, or in a new section at
// the end. changed is false for an empty entry and for one the file
// holds already.
func addMemoryEntry(content, section, entry string) (out string, changed bool) {
	entry = strings.TrimSpace(entry)
	if entry == "" {
		return content, false
	}
	if !strings.HasPrefix(entry, "- ") {
		entry = "- " + entry
	}
	if strings.Contains(content, entry) {
		return content, false
	}
	trim := func(s string) string { return strings.TrimRightFunc(s, unicode.IsSpace) }
	head := regexp.MustCompile(`(?m)^##\s+` + regexp.QuoteMeta(section) + `\s*$`)
	loc := head.FindStringIndex(content)
	if loc == nil {
		return trim(content) + "\n\n## " + section + "\n" + entry + "\n", true
	}
	start := loc[1]
	next := regexp.MustCompile(`(?m)^##\s+`).FindStringIndex(content[start:])
	if next == nil {
		return trim(content) + "\n" + entry + "\n", true
	}
	at := start + next[0]
	return trim(content[:at]) + "\n" + entry + "\n\n" + content[at:], true
}
