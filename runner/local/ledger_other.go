//go:build !unix

package local

import "github.com/spf13/afero"

// flock does not lock where flock(2) is missing: concurrent runs may
// then lose a cost from the ledger.
func flock(afero.File) error { return nil }
