// Package kdfcost holds the cost that keys.MarshalSecretKey stores in a new
// passphrase-protected crypt4gh key: the rounds of bcrypt_pbkdf and of
// PBKDF2. (scrypt's cost is not stored in the file: every reader uses
// N=2^14, so it cannot be lowered and is not here.)
//
// It exists for tests. A test binary whose tests make protected keys that
// only they read calls [LowerForTests] from its TestMain, and each such key
// then opens in microseconds instead of half a second. The files stay
// valid crypt4gh keys with fewer rounds; the fixed vectors of testdata
// keep the cost they were written with.
//
// Nothing in the command or the library calls LowerForTests:
// TestOnlyTestsLower fails when a file that is not a _test.go file does,
// and the keys package's own tests, which do not call it, check that
// MarshalSecretKey stores the real rounds. Being internal, the package
// cannot be imported from outside this module.
package kdfcost

import "sync/atomic"

// The rounds written by the reference implementation (crypt4gh 1.8.6),
// and those written after LowerForTests.
const (
	BcryptRounds = 100
	PBKDF2Rounds = 100000

	testBcryptRounds = 1
	testPBKDF2Rounds = 1000
)

var lowered atomic.Bool

// LowerForTests makes every crypt4gh key written afterwards in this process
// store the lowest cost. Only a TestMain may call it.
func LowerForTests() { lowered.Store(true) }

// Bcrypt returns the bcrypt_pbkdf rounds to store in a new key.
func Bcrypt() uint32 {
	if lowered.Load() {
		return testBcryptRounds
	}
	return BcryptRounds
}

// PBKDF2 returns the PBKDF2 rounds to store in a new key.
func PBKDF2() uint32 {
	if lowered.Load() {
		return testPBKDF2Rounds
	}
	return PBKDF2Rounds
}
