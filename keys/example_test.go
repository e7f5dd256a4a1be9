package keys_test

import (
	"fmt"
	"log"
	"os"

	"github.com/c4gh-go/crypt4gh/keys"
)

func ExampleParsePublicKey() {
	data, err := os.ReadFile("../testdata/interop/keys/alice.pub.pem")
	if err != nil {
		log.Fatal(err)
	}
	pk, err := keys.ParsePublicKey(data)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(pk)
	// Output: egXeasde+Vvrs5Vz2kspQCB9FQWC6IF2odCre9h29D4=
}
