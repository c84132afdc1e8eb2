package agents

import (
	"math"
	"testing"
)

func TestUsageAdd(t *testing.T) {
	u := Usage{TokensIn: 10, TokensOut: 2, TokensCached: 4, CostUSD: 0.5, Turns: 1, Sessions: 1}
	u.Add(Usage{TokensIn: 5, TokensOut: 1, TokensCached: 1, CostUSD: 0.25, CostEstimated: true, Turns: 2, Sessions: 1})
	want := Usage{TokensIn: 15, TokensOut: 3, TokensCached: 5, CostUSD: 0.75, CostEstimated: true, Turns: 3, Sessions: 2}
	if u != want {
		t.Errorf("got %+v, want %+v", u, want)
	}
	big := Usage{TokensIn: math.MaxInt64 - 1}
	big.Add(Usage{TokensIn: 10})
	if big.TokensIn != math.MaxInt64 {
		t.Errorf("overflow: TokensIn = %d", big.TokensIn)
	}
}

func TestUsageSub(t *testing.T) {
	now := Usage{TokensIn: 300, TokensOut: 30, TokensCached: 200, Turns: 3, Sessions: 1}
	prev := Usage{TokensIn: 100, TokensOut: 40, TokensCached: 50, Turns: 2, Sessions: 1}
	want := Usage{TokensIn: 200, TokensOut: 0, TokensCached: 150, Turns: 1, Sessions: 1}
	if got := now.Sub(prev); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestPrice(t *testing.T) {
	p := Price{InputPerMTok: 3, OutputPerMTok: 15, CachedPerMTok: 0.3}
	tests := []struct {
		name string
		u    Usage
		want float64
	}{
		{"uncached", Usage{TokensIn: 1_000_000, TokensOut: 1_000_000}, 18},
		// codex shape: 24763 in of which 24448 cached, 122 out.
		{"cached part of input", Usage{TokensIn: 24763, TokensCached: 24448, TokensOut: 122}, (315*3 + 24448*0.3 + 122*15) / 1e6},
		{"cached above input is clamped", Usage{TokensIn: 10, TokensCached: 50}, 10 * 0.3 / 1e6},
		{"negative counts are zero", Usage{TokensIn: -5, TokensOut: -5}, 0},
	}
	for _, tt := range tests {
		if got := p.Cost(tt.u); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("%s: Cost = %v, want %v", tt.name, got, tt.want)
		}
	}

	// Apply fills in a cost only where the tool reported none.
	if got := p.Apply(Usage{TokensIn: 1_000_000}); got.CostUSD != 3 || !got.CostEstimated {
		t.Errorf("Apply to unpriced: %+v", got)
	}
	if got := p.Apply(Usage{TokensIn: 1_000_000, CostUSD: 1}); got.CostUSD != 1 || got.CostEstimated {
		t.Errorf("Apply to reported: %+v", got)
	}
	if got := (Price{}).Apply(Usage{TokensIn: 5}); got.CostEstimated {
		t.Errorf("zero Price estimated: %+v", got)
	}
	if got := p.Apply(Usage{Sessions: 1}); got.CostEstimated {
		t.Errorf("no tokens estimated: %+v", got)
	}
}

// TestUsageSane: a report's negative, NaN or infinite numbers count as
// zero, and say so; a sane report is kept as it is.
func TestUsageSane(t *testing.T) {
	for _, tt := range []struct {
		in   Usage
		want Usage
		bad  string
	}{
		{Usage{TokensIn: 10, CostUSD: 0.5}, Usage{TokensIn: 10, CostUSD: 0.5}, ""},
		{Usage{CostUSD: -2000}, Usage{}, "a cost of -2000 USD"},
		{Usage{CostUSD: math.NaN()}, Usage{}, "a cost of NaN USD"},
		{Usage{CostUSD: math.Inf(1), TokensOut: -5}, Usage{}, "-5 output tokens, a cost of +Inf USD"},
	} {
		got, bad := tt.in.Sane()
		if got != tt.want || bad != tt.bad {
			t.Errorf("%+v.Sane() = %+v, %q; want %+v, %q", tt.in, got, bad, tt.want, tt.bad)
		}
	}
}
