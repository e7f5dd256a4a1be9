package header_test

import (
	"bytes"
	"fmt"
	"log"
	"os"

	"github.com/c4gh-go/crypt4gh/header"
	"github.com/c4gh-go/crypt4gh/keys"
)

func ExampleParse() {
	f, err := os.Open("../testdata/interop/enc/multi3.c4gh")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()

	h, err := header.Parse(f)
	if err != nil {
		log.Fatal(err)
	}
	// f is now positioned at the first body segment.
	fmt.Printf("%d packets, body at byte %d\n", len(h.Packets), h.Size())
	// Output: 3 packets, body at byte 340
}

func ExampleNew() {
	writer, _ := keys.Generate(nil)
	reader, _ := keys.Generate(nil)
	defer writer.Zero()
	defer reader.Zero()

	dataKey := [32]byte{ /* from crypto/rand */ }
	h, err := header.New(&writer, []keys.PublicKey{reader.Public()}, &dataKey, []uint64{0, 100}, nil)
	if err != nil {
		log.Fatal(err)
	}
	var file bytes.Buffer
	h.WriteTo(&file)

	// The reader's side.
	h, err = header.Parse(&file)
	if err != nil {
		log.Fatal(err)
	}
	sender := writer.Public()
	c, err := h.Decrypt(&reader, &sender)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Zero()
	fmt.Println(len(h.Packets), "packets;", len(c.DataKeys), "data key; edit list", c.EditList)
	// Output: 2 packets; 1 data key; edit list [0 100]
}
