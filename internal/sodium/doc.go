// Package sodium is a small cgo binding to libsodium, used only by tests
// that cross-check this module's cryptography against the C library that
// the other Crypt4GH implementations are built on.
//
// Every file except this one carries the build tag sodium, so the package
// is empty in a normal build and the shipped binary stays pure Go. To use
// the binding, build with cgo and the tag, with libsodium and pkg-config
// installed:
//
//	CGO_ENABLED=1 go test -tags sodium ./internal/sodium/ ./keys/ ./header/ ./body/
package sodium
