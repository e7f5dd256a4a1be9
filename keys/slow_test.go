package keys

import "testing"

// skipBcryptUnderRace skips a test case that runs bcrypt_pbkdf when the
// race detector is on: it slows the single-threaded Blowfish key schedule
// about 25 times (a bcrypt-protected key takes over 10 s to open) and can
// find nothing in it. .ci/run also runs this package without -race, where
// every case runs; TestInteropKeys opens each bcrypt key under -race too.
func skipBcryptUnderRace(t *testing.T, bcrypt bool) {
	t.Helper()
	if raceEnabled && bcrypt {
		t.Skip("bcrypt_pbkdf case skipped under -race; it runs in the test run without -race")
	}
}

// usesBcrypt reports whether opening the key file data runs bcrypt_pbkdf.
func usesBcrypt(data []byte) bool {
	info, err := InspectSecretKey(data)
	return err == nil && info.KDF == KDFBcrypt
}
