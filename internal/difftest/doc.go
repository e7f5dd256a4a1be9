// Package difftest holds differential tests that run this module's
// library against the other Go implementation of Crypt4GH,
// github.com/neicnordic/crypt4gh (pinned in go.mod), in the same process:
// files written by one side are read by the other, key files written by
// one side are parsed by the other, and random reads, re-encrypted
// headers and spliced files are compared with a simple model of what the
// bytes must be.
//
// The package has no code of its own: everything is in _test.go files, so
// that the oracle is a test dependency only and the crypt4gh command never
// links it (scripts/check-binary-deps.sh checks this). Where the two
// implementations differ on purpose, or where the oracle is wrong, the
// case is named in a test and explained in testdata/difftest/README.md.
//
// Run the seeds with go test; each Fuzz target also runs under go test
// -fuzz.
package difftest
