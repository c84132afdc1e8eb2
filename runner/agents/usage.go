package agents

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Usage is what sessions consumed. TokensIn counts every input token,
// cached ones included; TokensCached is the part of TokensIn read from
// the tool's cache.
type Usage struct {
	TokensIn, TokensOut, TokensCached int64
	CostUSD                           float64
	CostEstimated                     bool // computed from a Price, not reported by the tool
	Turns                             int
	Sessions                          int
}

// Sane returns u with every count that is negative, and a cost that is
// negative, NaN or infinite, set to zero, and what was wrong ("" when
// nothing was): a tool's report must not lower a run's spending below
// its budget, nor make it unreadable.
func (u Usage) Sane() (Usage, string) {
	var bad []string
	if math.IsNaN(u.CostUSD) || math.IsInf(u.CostUSD, 0) || u.CostUSD < 0 {
		bad = append(bad, fmt.Sprintf("a cost of %v USD", u.CostUSD))
		u.CostUSD = 0
	}
	for name, n := range map[string]*int64{"input tokens": &u.TokensIn, "output tokens": &u.TokensOut, "cached tokens": &u.TokensCached} {
		if *n < 0 {
			bad = append(bad, fmt.Sprintf("%d %s", *n, name))
			*n = 0
		}
	}
	if u.Turns < 0 {
		bad = append(bad, fmt.Sprintf("%d turns", u.Turns))
		u.Turns = 0
	}
	slices.Sort(bad)
	return u, strings.Join(bad, ", ")
}

// Add adds o to u. A sum is estimated when either part is.
func (u *Usage) Add(o Usage) {
	u.TokensIn = addSat(u.TokensIn, o.TokensIn)
	u.TokensOut = addSat(u.TokensOut, o.TokensOut)
	u.TokensCached = addSat(u.TokensCached, o.TokensCached)
	u.CostUSD += o.CostUSD
	u.CostEstimated = u.CostEstimated || o.CostEstimated
	u.Turns = int(addSat(int64(u.Turns), int64(o.Turns)))
	u.Sessions = int(addSat(int64(u.Sessions), int64(o.Sessions)))
}

// Sub returns the usage of u beyond prev, each count floored at zero. It
// turns a cumulative report (Result.UsageCumulative) into one session's
// usage, given what the earlier sessions of the thread were charged.
// Sessions is kept from u.
func (u Usage) Sub(prev Usage) Usage {
	d := u
	d.TokensIn = max(0, u.TokensIn-prev.TokensIn)
	d.TokensOut = max(0, u.TokensOut-prev.TokensOut)
	d.TokensCached = max(0, u.TokensCached-prev.TokensCached)
	d.CostUSD = max(0, u.CostUSD-prev.CostUSD)
	d.Turns = max(0, u.Turns-prev.Turns)
	return d
}

// Price is what a model's tokens cost, in US dollars per million tokens.
// The workflow gives it (an agent's price); there is no built-in list.
type Price struct {
	InputPerMTok, OutputPerMTok, CachedPerMTok float64
}

// Cost prices u: the cached input tokens at CachedPerMTok, the rest of
// the input at InputPerMTok and the output at OutputPerMTok.
//
// The parsers normalise TokensIn to count all input tokens: Claude
// reports input_tokens without cache reads and cache writes, so its
// TokensIn is input_tokens + cache_creation_input_tokens +
// cache_read_input_tokens (cache writes, which Anthropic bills above
// the input price, are priced as input here); Codex's input_tokens
// already includes cached_input_tokens; Gemini's prompt count already
// includes its cached count.
func (p Price) Cost(u Usage) float64 {
	cached := min(max(u.TokensCached, 0), max(u.TokensIn, 0))
	uncached := max(u.TokensIn, 0) - cached
	out := max(u.TokensOut, 0)
	return (float64(uncached)*p.InputPerMTok +
		float64(cached)*p.CachedPerMTok +
		float64(out)*p.OutputPerMTok) / 1e6
}

// Apply returns u with its cost computed from p when the tool reported
// none (CostUSD is zero and there are tokens), marked CostEstimated. A
// zero Price leaves u as it is.
func (p Price) Apply(u Usage) Usage {
	if p == (Price{}) || u.CostUSD != 0 || u.TokensIn+u.TokensOut == 0 {
		return u
	}
	u.CostUSD = p.Cost(u)
	u.CostEstimated = true
	return u
}

// addSat adds two counts, saturating instead of overflowing.
func addSat(a, b int64) int64 {
	s := a + b
	switch {
	case a > 0 && b > 0 && s < 0:
		return math.MaxInt64
	case a < 0 && b < 0 && s >= 0:
		return math.MinInt64
	}
	return s
}
