package objstore_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	tmtypes "github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/c4gh"
	"github.com/c4gh-go/crypt4gh/internal/s3test"
	"github.com/c4gh-go/crypt4gh/keys"
	"github.com/c4gh-go/crypt4gh/objstore"
)

// benchSize is the object of the transfer benchmarks.
const benchSize = 256 << 20

// BenchmarkTransfer uploads and downloads 256 MiB against one local
// versitygw, with this package and with the SDK's transfer manager (at its
// defaults, and at the part size and concurrency of this package), and
// downloads with a plain loop of parallel ranged GETs. Compare ns/op of
// the sub-benchmarks of one run:
//
//	go test -run '^$' -bench Transfer -benchtime 3x ./objstore
func BenchmarkTransfer(b *testing.B) {
	s3test.IsolateEnv(b)
	srv := s3test.Start(b)
	srv.Bucket(b, bucket)
	ctx := context.Background()
	c, err := objstore.New(ctx, objstore.Config{S3Config: srv.S3Config(b, srv.Addr)})
	if err != nil {
		b.Fatal(err)
	}
	sdk := srv.SDK()
	data := random(benchSize, 1)

	b.Run("upload/objstore", func(b *testing.B) {
		b.SetBytes(benchSize)
		for b.Loop() {
			w, err := c.NewWriter(ctx, bucket, "up-objstore", &objstore.WriterOptions{Force: true, Size: benchSize})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := w.Write(data); err != nil {
				b.Fatal(err)
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, tc := range []struct {
		name string
		opt  func(*transfermanager.Options)
	}{
		{"defaults", func(*transfermanager.Options) {}},
		{"16MiBx8", func(o *transfermanager.Options) {
			o.PartSizeBytes = objstore.DefaultPartSize
			o.Concurrency = objstore.DefaultConcurrency
		}},
	} {
		tm := transfermanager.New(sdk, tc.opt)
		b.Run("upload/transfermanager-"+tc.name, func(b *testing.B) {
			b.SetBytes(benchSize)
			for b.Loop() {
				_, err := tm.UploadObject(ctx, &transfermanager.UploadObjectInput{
					Bucket: aws.String(bucket), Key: aws.String("up-tm"), Body: bytes.NewReader(data)})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}

	if err := write(b, c, "down", data, len(data), &objstore.WriterOptions{Force: true}); err != nil {
		b.Fatal(err)
	}
	b.Run("download/objstore", func(b *testing.B) {
		b.SetBytes(benchSize)
		for b.Loop() {
			o, err := c.Open(ctx, bucket, "down")
			if err != nil {
				b.Fatal(err)
			}
			r, err := o.NewReader(0, -1, nil)
			if err != nil {
				b.Fatal(err)
			}
			if n, err := io.Copy(io.Discard, r); err != nil || n != benchSize {
				b.Fatal(n, err)
			}
			r.Close()
		}
	})
	b.Run("download/parallel-gets", func(b *testing.B) {
		b.SetBytes(benchSize)
		buf := make([]byte, benchSize)
		for b.Loop() {
			parallelGet(b, sdk, "down", buf, objstore.DefaultChunkSize, objstore.DefaultConcurrency)
		}
	})
	tm := transfermanager.New(sdk, func(o *transfermanager.Options) {
		o.GetObjectType = tmtypes.GetObjectRanges
		o.PartSizeBytes = objstore.DefaultChunkSize
		o.Concurrency = objstore.DefaultConcurrency
	})
	b.Run("download/transfermanager-8MiBx8", func(b *testing.B) {
		b.SetBytes(benchSize)
		for b.Loop() {
			out, err := tm.GetObject(ctx, &transfermanager.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("down")})
			if err != nil {
				b.Fatal(err)
			}
			if n, err := io.Copy(io.Discard, out.Body); err != nil || n != benchSize {
				b.Fatal(n, err)
			}
		}
	})
	b.Run("download/transfermanager-writerat-8MiBx8", func(b *testing.B) {
		b.SetBytes(benchSize)
		buf := make(bufferAt, benchSize)
		for b.Loop() {
			_, err := tm.DownloadObject(ctx, &transfermanager.DownloadObjectInput{Bucket: aws.String(bucket), Key: aws.String("down"), WriterAt: buf})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

// bufferAt is an io.WriterAt of a fixed size.
type bufferAt []byte

func (b bufferAt) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 || off+int64(len(p)) > int64(len(b)) {
		return 0, io.ErrShortWrite
	}
	return copy(b[off:], p), nil
}

// parallelGet is the plain way to download in parallel: workers take
// ranges and read them into their place in buf.
func parallelGet(b *testing.B, sdk *s3.Client, key string, buf []byte, chunk, workers int) {
	ranges := make(chan int)
	var wg sync.WaitGroup
	var once sync.Once
	var failed error
	for range workers {
		wg.Go(func() {
			for off := range ranges {
				end := min(off+chunk, len(buf))
				out, err := sdk.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: &key,
					Range: aws.String(fmt.Sprintf("bytes=%d-%d", off, end-1))})
				if err == nil {
					_, err = io.ReadFull(out.Body, buf[off:end])
					out.Body.Close()
				}
				if err != nil {
					once.Do(func() { failed = err })
				}
			}
		})
	}
	for off := 0; off < len(buf); off += chunk {
		ranges <- off
	}
	close(ranges)
	wg.Wait()
	if failed != nil {
		b.Fatal(failed)
	}
}

// BenchmarkEncryptUpload encrypts 256 MiB with c4gh.Encrypt (the parallel
// engine) straight into a Writer against a local versitygw, as
// `crypt4gh encrypt -o s3://…` does. Its CPU profile shows what the
// client spends besides sealing and sending:
//
//	go test -run '^$' -bench EncryptUpload -benchtime 3x -cpuprofile cpu.out ./objstore
func BenchmarkEncryptUpload(b *testing.B) {
	s3test.IsolateEnv(b)
	srv := s3test.Start(b)
	srv.Bucket(b, bucket)
	ctx := context.Background()
	c, err := objstore.New(ctx, objstore.Config{S3Config: srv.S3Config(b, srv.Addr)})
	if err != nil {
		b.Fatal(err)
	}
	alice, err := keys.Generate(nil)
	if err != nil {
		b.Fatal(err)
	}
	data := random(benchSize, 2)
	size := body.EncryptedSize(benchSize) + 1024
	b.SetBytes(benchSize)
	for b.Loop() {
		w, err := c.NewWriter(ctx, bucket, "up-c4gh", &objstore.WriterOptions{Force: true, Size: size})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c4gh.Encrypt(w, bytes.NewReader(data), c4gh.EncryptOptions{Recipients: []keys.PublicKey{alice.Public()}}); err != nil {
			b.Fatal(err)
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
