package cli

// TEMPORARY until keys.ParsePublicKeys lands from the keys branch.

import "github.com/c4gh-go/crypt4gh/keys"

func parsePublicKeysShim(data []byte) ([]keys.PublicKey, error) {
	pk, err := keys.ParsePublicKey(data)
	if err != nil {
		return nil, err
	}
	return []keys.PublicKey{pk}, nil
}
