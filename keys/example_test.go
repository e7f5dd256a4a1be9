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
	// Output: 7a05de6ac75ef95bebb39573da4b2940207d150582e88176a1d0ab7bd876f43e
}
