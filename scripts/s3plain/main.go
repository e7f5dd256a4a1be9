// Command s3plain moves bytes to and from an S3 store the plain way, with
// the AWS SDK and its transfer manager and nothing of crypt4gh, for
// scripts/bench-s3.sh to compare the crypt4gh command with. It takes the
// credentials and the endpoint from the AWS environment variables
// (AWS_ENDPOINT_URL_S3 is addressed in path style).
//
//	s3plain mb BUCKET                     create a bucket
//	s3plain put [-part MiB -conc N] FILE BUCKET KEY
//	                                      upload with the transfer manager
//	s3plain get [-part MiB -conc N] BUCKET KEY FILE
//	                                      download with the transfer manager,
//	                                      ranged GETs in parallel, into FILE
//	s3plain copy BUCKET SRC DST           server-side CopyObject
//	s3plain wait ENDPOINT                 wait until ENDPOINT accepts connections
//	s3plain port                          print a free port on 127.0.0.1
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	tmtypes "github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

func main() {
	if len(os.Args) < 2 {
		fail("usage: s3plain mb|put|get|copy|wait|port ...")
	}
	ctx := context.Background()
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	part := fs.Int("part", 0, "part size in MiB (0: the transfer manager's default)")
	conc := fs.Int("conc", 0, "parts at once (0: the transfer manager's default)")
	fs.Parse(os.Args[2:])
	args := fs.Args()
	switch os.Args[1] {
	case "port":
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		check(err)
		fmt.Println(ln.Addr().(*net.TCPAddr).Port)
		ln.Close()
		return
	case "wait":
		need(args, 1)
		u, err := url.Parse(args[0])
		check(err)
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if c, err := net.Dial("tcp", u.Host); err == nil {
				c.Close()
				return
			}
		}
		fail("%s does not answer", args[0])
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	check(err)
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.UsePathStyle = true
		o.DisableLogOutputChecksumValidationSkipped = true // ranged GETs have no whole checksum
	})
	tm := transfermanager.New(client, func(o *transfermanager.Options) {
		if *part > 0 {
			o.PartSizeBytes = int64(*part) << 20
		}
		if *conc > 0 {
			o.Concurrency = *conc
		}
		o.GetObjectType = tmtypes.GetObjectRanges
	})
	switch os.Args[1] {
	case "mb":
		need(args, 1)
		_, err = client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &args[0]})
	case "put":
		need(args, 3)
		var f *os.File
		if f, err = os.Open(args[0]); err == nil {
			defer f.Close()
			_, err = tm.UploadObject(ctx, &transfermanager.UploadObjectInput{Bucket: &args[1], Key: &args[2], Body: f})
		}
	case "get":
		need(args, 3)
		var f *os.File
		if f, err = os.Create(args[2]); err == nil {
			_, err = tm.DownloadObject(ctx, &transfermanager.DownloadObjectInput{Bucket: &args[0], Key: &args[1], WriterAt: f})
			if err == nil {
				err = f.Sync() // as durable as the command's output
			}
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
	case "copy":
		need(args, 3)
		_, err = client.CopyObject(ctx, &s3.CopyObjectInput{Bucket: &args[0], Key: &args[2], CopySource: aws.String(args[0] + "/" + args[1])})
	default:
		fail("unknown command %q", os.Args[1])
	}
	check(err)
}

func need(args []string, n int) {
	if len(args) != n {
		fail("%s needs %d arguments", os.Args[1], n)
	}
}

func check(err error) {
	if err != nil {
		fail("%v", err)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "s3plain: "+format+"\n", args...)
	os.Exit(1)
}
