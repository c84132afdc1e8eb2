package gates

// Program is a compiled expression. (Placeholder until the
// implementation lands.)
type Program struct{ src string }

// Template is a compiled template. (Placeholder until the
// implementation lands.)
type Template struct{ src string }
