package sandbox

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSpecValidate(t *testing.T) {
	cases := []struct {
		name string
		spec Spec
		err  string // a part of the error; empty for none
	}{
		{"minimal", Spec{Repo: "/r"}, ""},
		{"everything", Spec{Repo: "/r", ReadOnly: []string{"/etc/flow"}, Writable: []string{"/r/.agents/runs/x/sessions/s"}, Dir: "/r/sub", PIDNamespace: true}, ""},
		{"no repository", Spec{}, "no repository"},
		{"relative repository", Spec{Repo: "r"}, `repository "r" is not an absolute path`},
		{"unclean repository", Spec{Repo: "/r/"}, `repository "/r/" is not a clean path`},
		{"relative read-only", Spec{Repo: "/r", ReadOnly: []string{"x"}}, `read-only path "x"`},
		{"unclean writable", Spec{Repo: "/r", Writable: []string{"/r/.agents/../x"}}, `writable path "/r/.agents/../x" is not a clean path`},
		{"relative working directory", Spec{Repo: "/r", Dir: "."}, `working directory "."`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.spec.Validate()
			switch {
			case c.err == "" && err != nil:
				t.Errorf("Validate() = %v", err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Errorf("Validate() = %v, want an error with %q", err, c.err)
			}
		})
	}
}

func TestSpecMounts(t *testing.T) {
	cases := []struct {
		name string
		spec Spec
		want []mount
	}{
		{"agents only", Spec{Repo: "/w/r"}, []mount{
			{"/w", pin}, {"/w/r", pin}, {"/w/r/.agents", readOnly},
		}},
		{"repository at the root", Spec{Repo: "/"}, []mount{
			{"/.agents", readOnly},
		}},
		{"session and worktree beneath, listed first", Spec{Repo: "/r", Writable: []string{"/r/.agents/worktrees/w", "/r/.agents/runs/x/sessions/s"}}, []mount{
			{"/r", pin}, {"/r/.agents", readOnly}, {"/r/.agents/worktrees/w", writable}, {"/r/.agents/runs/x/sessions/s", writable},
		}},
		{"read-only beneath writable beneath read-only", Spec{Repo: "/r", ReadOnly: []string{"/r/.agents/wt/.git"}, Writable: []string{"/r/.agents/wt"}}, []mount{
			{"/r", pin}, {"/r/.agents", readOnly}, {"/r/.agents/wt", writable}, {"/r/.agents/wt/.git", readOnly},
		}},
		{"listed both ways is read-only", Spec{Repo: "/r", ReadOnly: []string{"/r/.agents/x"}, Writable: []string{"/r/.agents/x"}}, []mount{
			{"/r", pin}, {"/r/.agents", readOnly}, {"/r/.agents/x", readOnly},
		}},
		{"writable outside is only pinned", Spec{Repo: "/r", Writable: []string{"/tmp/art", "/r"}}, []mount{
			{"/r", pin}, {"/r/.agents", readOnly}, {"/tmp/art", pin},
		}},
		{"no duplicates", Spec{Repo: "/r", ReadOnly: []string{"/r/.agents", "/r/.agents"}, Writable: []string{"/r/.agents/s", "/r/.agents/s"}}, []mount{
			{"/r", pin}, {"/r/.agents", readOnly}, {"/r/.agents/s", writable},
		}},
		{"a prefix is not a parent", Spec{Repo: "/r", Writable: []string{"/r/.agents-old/s"}}, []mount{
			{"/r", pin}, {"/r/.agents", readOnly}, {"/r/.agents-old/s", pin},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, c.spec.mounts(), cmp.AllowUnexported(mount{})); diff != "" {
				t.Errorf("mounts() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSpecEncoding(t *testing.T) {
	spec := Spec{Repo: "/r", ReadOnly: []string{"/e"}, Writable: []string{"/r/.agents/s"}, Dir: "/r/d", PIDNamespace: true}
	arg, err := spec.encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeSpec(arg)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(spec, got); diff != "" {
		t.Errorf("decode(encode(spec)) (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"", "{", `{"repo":"r"}`} {
		if _, err := decodeSpec(bad); err == nil {
			t.Errorf("decodeSpec(%q) succeeded", bad)
		}
	}
}

func TestParseMode(t *testing.T) {
	cases := []struct {
		in   string
		want Mode
		err  bool
	}{
		{"", On, false}, {"on", On, false}, {"ON", On, false}, {" off ", Off, false},
		{"required", Required, false}, {"Required", Required, false},
		{"yes", 0, true}, {"true", 0, true}, {"landlock", 0, true},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := ParseMode(c.in)
			if (err != nil) != c.err || got != c.want {
				t.Errorf("ParseMode(%q) = %v, %v; want %v, error %v", c.in, got, err, c.want, c.err)
			}
			if err == nil {
				if again, _ := ParseMode(got.String()); again != got {
					t.Errorf("ParseMode(%q.String()) = %v", got, again)
				}
			}
		})
	}
}

func TestModeDecide(t *testing.T) {
	unavailable := errors.New("no user namespaces")
	cases := []struct {
		mode     Mode
		probe    error
		calls    int
		decision Decision
		err      bool
	}{
		{On, nil, 1, Decision{Use: true}, false},
		{On, unavailable, 1, Decision{Reason: unavailable}, false},
		{Off, nil, 0, Decision{}, false},
		{Off, unavailable, 0, Decision{}, false},
		{Required, nil, 1, Decision{Use: true}, false},
		{Required, unavailable, 1, Decision{}, true},
		{Mode(7), nil, 0, Decision{}, true},
	}
	for _, c := range cases {
		t.Run(c.mode.String()+"/"+errString(c.probe), func(t *testing.T) {
			calls := 0
			d, err := c.mode.Decide(func() error { calls++; return c.probe })
			if d != c.decision || (err != nil) != c.err || calls != c.calls {
				t.Errorf("Decide = %+v, %v after %d probes; want %+v, error %v after %d", d, err, calls, c.decision, c.err, c.calls)
			}
			if c.err && c.probe != nil && !errors.Is(err, c.probe) {
				t.Errorf("Decide's error %v does not wrap the probe's", err)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}
