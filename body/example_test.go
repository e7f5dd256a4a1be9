package body_test

import (
	"bytes"
	"fmt"
	"io"
	"log"

	"github.com/c4gh-go/crypt4gh/body"
)

func Example() {
	var key [32]byte // in real use: random, and stored in the header

	var encrypted bytes.Buffer
	w, err := body.NewWriter(&encrypted, &key)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := io.WriteString(w, "hello, world\n"); err != nil {
		log.Fatal(err)
	}
	if err := w.Close(); err != nil { // writes the last segment
		log.Fatal(err)
	}
	fmt.Println("encrypted body:", encrypted.Len(), "bytes =", body.EncryptedSize(13))

	r, err := body.NewReader(&encrypted, [][32]byte{key})
	if err != nil {
		log.Fatal(err)
	}
	plain, err := io.ReadAll(r)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(string(plain))
	// Output:
	// encrypted body: 41 bytes = 41
	// hello, world
}

func ExampleDecrypt() {
	var key [32]byte
	plain := bytes.Repeat([]byte("crypt4gh"), 1<<18) // 2 MiB

	var encrypted, decrypted bytes.Buffer
	if _, err := body.Encrypt(&encrypted, bytes.NewReader(plain), &key, 0); err != nil {
		log.Fatal(err)
	}
	n, err := body.Decrypt(&decrypted, &encrypted, [][32]byte{key}, 0)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(n, bytes.Equal(decrypted.Bytes(), plain))
	// Output:
	// 2097152 true
}
