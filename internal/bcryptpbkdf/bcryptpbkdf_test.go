package bcryptpbkdf

import (
	"bytes"
	"encoding/hex"
	"testing"
)

// TestVectors checks the OpenBSD regress vectors
// (regress/lib/libutil/bcrypt_pbkdf, also in pyca/bcrypt's tests),
// including outputs longer than one block, which exercise the interleaving.
func TestVectors(t *testing.T) {
	unhex := func(s string) []byte {
		b, err := hex.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tests := []struct {
		rounds         int
		password, salt []byte
		want           string
	}{
		{4, []byte("password"), []byte("salt"), "5bbf0cc293587f1c3635555c27796598d47e579071bf427e9d8fbe842aba34d9"},
		{4, []byte("password"), []byte{0}, "c12b566235eee04c212598970a579a67"},
		{4, []byte{0}, []byte("salt"), "6051be18c2f4f82cbf0efee5471b4bb9"},
		{4, []byte("password\x00"), []byte("salt\x00"), "7410e44cf4fa07bfaac8a928b1727fac001375e7bf7384370f48efd121743050"},
		{4, []byte("pass\x00wor"), []byte("sa\x00l"), "c2bffd9db38f6569efef4372f4de83c0"},
		{8, []byte("password"), []byte("salt"), "e1367ec5151a33faac4cc1c144cd23fa15d5548493ecc99b9b5d9c0d3b27bec76227ea66088b849b20ab7aa478010246e74bba51723fefa9f9474d6508845e8d"},
		{42, []byte("password"), []byte("salt"), "833cf0dcf56db65608e8f0dc0ce882bd"},
		{8, unhex("0db3ac94b3ee53284f4a22893b3c24ae"), unhex("3a62f0f0dbcef823cfcc854856ea1028"), "204438175eee7ce136c91b49a67923ff"},
		{8, unhex("0db3ac94b3ee53284f4a22893b3c24ae"), unhex("3a62f0f0dbcef823cfcc854856ea1028"),
			"2054b9fff34e3721440334746828e9ed38de4b72e0a69adc170a13b5e8d646385ea4034ae6d26600ee2332c5ed40ad55" +
				"7c86e3403fbb30e4e1dc1ae06b99a071368f518d2c426651c9e7e437fd6c915b1bbfc3a4cea71491490ea7afb7dd0290" +
				"a678a4f441128db1792eab2776b21eb4238e0715add4127dff44e4b3e4cc4c4f9970083f3f74bd698873fdf648844f75" +
				"c9bf7f9e0c4d9e5d89a7783997492966616707611cb901de31a19726b6e08c3a8001661f2d5c9dcc33b4aa072f90dd0b" +
				"3f548d5eeba4211397e2fb062e526e1d68f46a4ce256185b4badc2685fbe78e1c7657b59f83ab9ab80cf9318d6add1f5" +
				"933f12d6f36182c8e8115f68030a1244"},
	}
	for i, tc := range tests {
		want := unhex(tc.want)
		got, err := Key(tc.password, tc.salt, tc.rounds, len(want))
		if err != nil {
			t.Fatalf("vector %d: %v", i, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("vector %d: got %x, want %x", i, got, want)
		}
	}
}

func TestBcryptPBKDFArguments(t *testing.T) {
	for _, tc := range []struct {
		pass, salt     string
		rounds, keyLen int
	}{
		{"", "salt", 4, 32},
		{"password", "", 4, 32},
		{"password", "salt", 0, 32},
		{"password", "salt", 4, 0},
		{"password", "salt", 4, 1025},
	} {
		if _, err := Key([]byte(tc.pass), []byte(tc.salt), tc.rounds, tc.keyLen); err == nil {
			t.Errorf("Key(%q, %q, %d, %d) did not fail", tc.pass, tc.salt, tc.rounds, tc.keyLen)
		}
	}
	if k, err := Key([]byte("p"), []byte("s"), 1, 1024); err != nil || len(k) != 1024 {
		t.Errorf("1024-byte key: %d bytes, %v", len(k), err)
	}
}
