package config

// retention builds defaults.retention: keep, a positive number of
// runs, and older_than, a duration written as a constant (it is applied
// after the run, where no expression has a meaning).
func (b *builder) retention(rr *rawRetention) *Retention {
	if rr == nil {
		return nil
	}
	if rr.empty {
		b.d.errorf(rr.pos, "defaults.retention is empty: give keep, older_than or both")
		return nil
	}
	r := &Retention{Pos: rr.pos}
	if rr.keep.ok() {
		r.Keep, _ = b.count("defaults.retention.keep", rr.keep)
	}
	if o := rr.olderThan; o.ok() {
		if !looksNumeric(o.val) {
			b.d.errorf(o.pos(), "defaults.retention.older_than: want a duration such as 7d or 12h, got %q", o.val)
		} else {
			r.OlderThan, _ = b.constDuration("defaults.retention.older_than", o)
		}
	}
	return r
}
