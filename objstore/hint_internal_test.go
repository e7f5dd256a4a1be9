package objstore

import (
	"errors"
	"net"
	"strings"
	"testing"
)

// TestHintNoEndpoint: a request that reached no server, from a client
// with no endpoint of its own, names AWS_ENDPOINT_URL_S3 and --s3-config;
// with an endpoint, or for a server's answer, it does not.
func TestHintNoEndpoint(t *testing.T) {
	unreachable := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	dns := &net.DNSError{Err: "no such host", Name: "bucket.s3.amazonaws.com"}
	aws := &Client{source: "environment"}
	for _, err := range []error{unreachable, dns} {
		if h := aws.hint(err); !strings.Contains(h, "AWS_ENDPOINT_URL_S3") || !strings.Contains(h, "--s3-config") {
			t.Errorf("%v: hint %q", err, h)
		}
	}
	own := &Client{source: "environment", endpoint: "http://127.0.0.1:9"}
	if h := own.hint(unreachable); h != "" {
		t.Errorf("with an endpoint: hint %q", h)
	}
	if h := aws.hint(ErrNotFound); h != "" {
		t.Errorf("an answer: hint %q", h)
	}
}
