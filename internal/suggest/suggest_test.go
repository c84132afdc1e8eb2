package suggest

import "testing"

func TestClosest(t *testing.T) {
	steps := []string{"planning", "coding", "tests", "code_review", "manual_approval", "merge"}
	tests := []struct {
		name string
		want string
		ok   bool
	}{
		{"code_reveiw", "code_review", true},
		{"codng", "coding", true},
		{"test", "tests", true},
		{"deploy", "", false},
		{"x", "", false},
		{"mrege", "merge", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Closest(tt.name, steps)
			if got != tt.want || ok != tt.ok {
				t.Errorf("Closest(%q) = %q, %v; want %q, %v", tt.name, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		d    int
	}{
		{"", "", 0}, {"abc", "abc", 0}, {"abc", "acb", 1}, {"kitten", "sitting", 3}, {"", "ab", 2},
	} {
		if got := distance(tt.a, tt.b); got != tt.d {
			t.Errorf("distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.d)
		}
	}
}
