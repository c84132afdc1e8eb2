// Package suggest finds the closest of a set of names to a misspelt
// one, for "did you mean" hints in diagnostics.
package suggest

// Closest returns the candidate nearest to name by edit distance, and
// false when none is near enough to be a plausible typo: the distance
// must be at most a third of the name's length, and at least 1 edit is
// always allowed for names of three or more characters.
func Closest(name string, candidates []string) (string, bool) {
	best, bestD := "", -1
	for _, c := range candidates {
		if c == name {
			continue
		}
		d := distance(name, c)
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	if bestD < 0 {
		return "", false
	}
	limit := len([]rune(name)) / 3
	if limit < 1 && len([]rune(name)) >= 3 {
		limit = 1
	}
	if limit < 2 && len([]rune(name)) >= 5 {
		limit = 2
	}
	if bestD > limit {
		return "", false
	}
	return best, true
}

// distance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and transpositions of adjacent
// runes each cost 1.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
