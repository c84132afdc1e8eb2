package config

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/flow-run/flow/internal/suggest"
)

// An agent is started in one of two ways: run: is a shell command that
// reads the prompt from the environment; preset: names a tool flow
// knows (docs/agents.md), started through its headless interface so that
// flow reads its final text, session id, tokens and cost, and resumes
// its conversation when a step is re-entered. The keys that tune a
// preset (model, args, resume, price) mean nothing to a command, which
// says such things itself, so they are errors on a run: agent.

func (b *builder) agents() {
	for _, ra := range b.raw.agents {
		name := ra.name.val
		if !namePattern.MatchString(name) {
			b.d.errorf(ra.name.pos(), "agent name %q: want lowercase letters, digits, _ and -, starting with a letter or digit", name)
		}
		if _, dup := b.w.Agents[name]; dup {
			b.d.errorf(ra.name.pos(), "duplicate agent %q", name)
			continue
		}
		a := &Agent{Name: name, Pos: ra.name.pos(), Env: b.env(ra.env)}
		switch {
		case ra.run.set && ra.preset.set:
			b.d.errorf(ra.preset.pos(), "agent %q has both run and preset; give one", name)
		case !ra.run.set && !ra.preset.set:
			b.d.errorf(ra.name.pos(), "agent %q: give run (a command) or preset (%s)", name, presetList())
		}
		if ra.run.set && !ra.preset.set {
			a.Run = b.template("run", ra.run)
			b.notPreset(name, ra)
		}
		if ra.preset.set {
			b.preset(a, ra)
		}
		b.w.Agents[name] = a
	}
}

// preset reads the keys of a preset agent.
func (b *builder) preset(a *Agent, ra *rawAgent) {
	if p := ra.preset; p.ok() {
		if slices.Contains(presets, p.val) {
			a.Preset = p.val
		} else {
			msg := fmt.Sprintf("agent %q: unknown preset %q", a.Name, p.val)
			s, ok := suggest.Closest(p.val, presets)
			if ok {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			} else {
				msg += "; want " + presetList()
			}
			b.d.errorHint(p.pos(), msg, s)
		}
	}
	a.Model = ra.model.val
	if ra.model.ok() && strings.TrimSpace(a.Model) == "" {
		b.d.errorf(ra.model.pos(), "agent %q: model is empty; leave it out for the tool's default", a.Name)
	}
	for _, arg := range ra.args {
		a.Args = append(a.Args, arg.val)
	}
	a.Resume = b.boolean("resume", ra.resume, true)
	if rp := ra.price; rp != nil {
		p := &Price{}
		p.InputPerMTok, _ = b.number("price.input_per_mtok", rp.input, false)
		p.OutputPerMTok, _ = b.number("price.output_per_mtok", rp.output, false)
		p.CachedPerMTok, _ = b.number("price.cached_per_mtok", rp.cached, false)
		if rp.empty {
			b.d.errorf(rp.pos, "agent %q: price is empty; give input_per_mtok, output_per_mtok or cached_per_mtok", a.Name)
		}
		a.Price = p
	}
}

// notPreset reports the keys of a preset given to a run: agent.
func (b *builder) notPreset(name string, ra *rawAgent) {
	for _, k := range []struct {
		key string
		set bool
		pos Pos
		why string
	}{
		{"model", ra.model.set, ra.model.pos(), "a run: agent names its model in its command"},
		{"args", ra.argsPos != Pos{}, ra.argsPos, "a run: agent puts its arguments in its command"},
		{"resume", ra.resume.set, ra.resume.pos(), "a run: agent cannot resume a conversation"},
		{"price", ra.price != nil, priceAt(ra.price), "flow reads no token counts from a run: agent"},
	} {
		if k.set {
			b.d.errorf(k.pos, "agent %q: %s is for preset agents (preset: %s); %s", name, k.key, presetList(), k.why)
		}
	}
}

func priceAt(p *rawPrice) Pos {
	if p == nil {
		return Pos{}
	}
	return p.pos
}

// presetList names the presets for messages: "claude, codex or gemini".
func presetList() string {
	return strings.Join(presets[:len(presets)-1], ", ") + " or " + presets[len(presets)-1]
}

// number reads a decimal number: at least 0, or greater than 0 when
// positive is set. It returns 0 and false when the value is not given
// or is wrong (which it reports).
func (b *builder) number(field string, s str, positive bool) (float64, bool) {
	if !s.ok() {
		return 0, false
	}
	v := strings.TrimSpace(s.val)
	n, err := strconv.ParseFloat(v, 64)
	switch {
	case err != nil || math.IsNaN(n) || math.IsInf(n, 0) || strings.ContainsAny(v, "xXpP_"):
		want := "a number of at least 0"
		if positive {
			want = "a positive number"
		}
		b.d.errorf(s.pos(), "%s: want %s, got %q", field, want, s.val)
		return 0, false
	case positive && n <= 0:
		b.d.errorf(s.pos(), "%s: must be greater than 0, got %s", field, v)
		return 0, false
	case n < 0:
		b.d.errorf(s.pos(), "%s: must be at least 0, got %s", field, v)
		return 0, false
	}
	return n, true
}
