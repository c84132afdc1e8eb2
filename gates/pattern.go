package gates

import (
	"fmt"
	"regexp"
	"regexp/syntax"

	"github.com/expr-lang/expr/vm/runtime"
)

// Limits on the regular expressions of matches. Go's regexp matches in
// time linear in the input, but its compiled program grows with the
// pattern's repetitions expanded: a pattern of a few kilobytes such as
// (a{1000}) repeated takes gigabytes and seconds to compile, and a
// match costs each byte of input times each part of the program.
const (
	// MaxPattern is the longest pattern, in bytes.
	MaxPattern = 4096
	// MaxPatternSize bounds the size of a pattern with its repetitions
	// expanded: each literal character, class, operator and group
	// counts as one part, and x{n,m} as m copies of x (n+1 when it has
	// no maximum), so that nested repetitions multiply.
	MaxPatternSize = 2000
	// maxCachedPatterns is how many compiled patterns one evaluation
	// keeps, so that a pattern built at run time and matched in a loop
	// is compiled once.
	maxCachedPatterns = 16
	// compileSteps is what compiling a pattern costs, in steps, per
	// part, besides compileBase for any pattern.
	compileSteps = 20
	compileBase  = 100
)

// pattern is a compiled regular expression within the limits.
type pattern struct {
	re *regexp.Regexp
	// size is the pattern's size with its repetitions expanded.
	size int
	// literal is true when the pattern matches only itself, so that
	// matching it is a search for a string.
	literal bool
}

// cost returns the steps of matching the pattern against n bytes.
func (p *pattern) cost(n int) int {
	if p.literal {
		return 1 + n/scanBytes
	}
	return 1 + mulSat(n+1, p.size)
}

// patternLimit returns an error when src is longer than MaxPattern or
// larger than MaxPatternSize. It returns nil for a pattern that does
// not parse: compiling it reports why.
func patternLimit(src string) error {
	_, err := measurePattern(src)
	return err
}

// measurePattern returns the size of pattern src (see MaxPatternSize),
// or an error when src is over the limits. A pattern that does not
// parse measures 0.
func measurePattern(src string) (int, error) {
	if len(src) > MaxPattern {
		return 0, fmt.Errorf("regular expression longer than %d bytes", MaxPattern)
	}
	re, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return 0, nil
	}
	size := patternSize(re, MaxPatternSize+1)
	if size > MaxPatternSize {
		return 0, fmt.Errorf("regular expression too large: more than %d parts with its repetitions expanded", MaxPatternSize)
	}
	return size, nil
}

// patternSize returns the size of re with its repetitions expanded
// (see MaxPatternSize), or limit when that is larger. Go's parser
// bounds the nesting of re, and so the depth of the recursion.
func patternSize(re *syntax.Regexp, limit int) int {
	n := 1
	if re.Op == syntax.OpLiteral {
		n = max(1, len(re.Rune))
	}
	for _, sub := range re.Sub {
		n += patternSize(sub, limit)
		if n >= limit {
			return limit
		}
	}
	if re.Op == syntax.OpRepeat {
		count := re.Max
		if count < 0 {
			count = re.Min + 1
		}
		n = 1 + mulSat(n-1, max(count, 1))
	}
	return min(n, limit)
}

// compilePattern checks src against the limits and compiles it.
func compilePattern(src string) (*pattern, error) {
	size, err := measurePattern(src)
	if err != nil {
		return nil, err
	}
	re, err := regexp.Compile(src)
	if err != nil {
		return nil, err
	}
	_, literal := re.LiteralPrefix()
	return &pattern{re: re, size: size, literal: literal}, nil
}

// pattern returns src compiled, from the evaluation's cache when it was
// compiled before, charging the compilation.
func (b *budget) pattern(src string) (*pattern, error) {
	if p, ok := b.patterns[src]; ok {
		return p, nil
	}
	if err := b.step(1 + len(src)/scanBytes); err != nil {
		return nil, err
	}
	p, err := compilePattern(src)
	if err != nil {
		return nil, err
	}
	if err := b.step(compileBase + compileSteps*p.size); err != nil {
		return nil, err
	}
	if b.patterns == nil {
		b.patterns = make(map[string]*pattern)
	}
	if len(b.patterns) < maxCachedPatterns {
		b.patterns[src] = p
	}
	return p, nil
}

// match is matchFunc, s matches pattern: the pattern is a *pattern
// compiled when the expression was, or a string compiled now, within
// the limits. The match is charged before it runs. As with expr's own
// matches, nil on either side does not match.
func match(args ...any) (any, error) {
	b, s, p := budgetArg(args), args[1], args[2]
	if runtime.IsNil(s) || runtime.IsNil(p) {
		return false, nil
	}
	var pat *pattern
	switch p := p.(type) {
	case *pattern:
		pat = p
	case string:
		var err error
		if pat, err = b.pattern(p); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("invalid operation: matches (pattern is %s, not a string)", typeName(p))
	}
	switch s := s.(type) {
	case string:
		if err := b.step(pat.cost(len(s))); err != nil {
			return nil, err
		}
		return pat.re.MatchString(s), nil
	case []byte:
		if err := b.step(pat.cost(len(s))); err != nil {
			return nil, err
		}
		return pat.re.Match(s), nil
	}
	return nil, fmt.Errorf("invalid operation: %s matches a pattern", typeName(s))
}
