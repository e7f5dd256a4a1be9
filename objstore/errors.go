package objstore

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
)

// Sentinel errors, tested with errors.Is. Each carries the kind that
// errkind.Of reports for it.
var (
	// ErrInvalidURL means a URL is not s3://BUCKET/KEY, s3://BUCKET/PREFIX/,
	// https://... or http:// to a loopback address, or embeds credentials.
	ErrInvalidURL = errkind.New(errkind.Usage, "invalid URL")
	// ErrNotFound means the object does not exist.
	ErrNotFound = errkind.New(errkind.Usage, "no such object")
	// ErrNoBucket means the bucket does not exist.
	ErrNoBucket = errkind.New(errkind.Usage, "no such bucket")
	// ErrExists means the object exists and the write was not told to
	// replace it.
	ErrExists = errkind.New(errkind.Usage, "object exists")
	// ErrAccessDenied means the server refused the credentials or their
	// rights (also an unknown access key, a wrong secret, an expired token
	// or presigned URL).
	ErrAccessDenied = errkind.New(errkind.Key, "access denied")
	// ErrNoCredentials means no source gave credentials.
	ErrNoCredentials = errkind.New(errkind.Key, "no credentials found")
	// ErrChanged means the object was replaced or modified while it was
	// being read or copied: its ETag no longer matches the one seen when it
	// was opened. Reading it again from the start may succeed.
	ErrChanged = errkind.New(errkind.Other, "object changed while it was read")
	// ErrNoRange means a web server answered a range request with the
	// whole resource, so it cannot be read in pieces.
	ErrNoRange = errkind.New(errkind.Usage, "server does not support range requests")
	// ErrAborted is returned by a Writer used after Abort.
	ErrAborted = errkind.New(errkind.Other, "upload aborted")
	// ErrTooLarge means an object needs more than 10,000 parts at the part
	// size in use, or a part is beyond what S3 accepts.
	ErrTooLarge = errkind.New(errkind.Usage, "object too large for the part size")
	// ErrUnsupported means a store cannot do what was asked of it, such
	// as writing to a web server, or a scheme has no store.
	ErrUnsupported = errkind.New(errkind.Usage, "not supported by this store")
)

// Error is the error of an operation on an object, a prefix or a URL. Its
// message names the operation and the location, never a secret; Hint, when
// not empty, says where the credentials and the endpoint came from.
type Error struct {
	Op       string // what failed: "open", "read", "write", "list", "compose"
	Location string // s3://BUCKET/KEY, or a URL without its query
	Err      error  // a sentinel of this package, or the cause
	hint     string
}

// Error returns "failed to OP LOCATION: CAUSE".
func (e *Error) Error() string {
	return fmt.Sprintf("failed to %s %s: %v", e.Op, e.Location, e.Err)
}

// Unwrap returns the cause, for errors.Is and errors.As.
func (e *Error) Unwrap() error { return e.Err }

// Kind is the kind of the underlying error, for errkind.Of.
func (e *Error) Kind() errkind.Kind { return errkind.Of(e.Err) }

// Hint returns advice for a person, such as which credential source and
// endpoint were used, or "" when there is none. It never contains a secret.
func (e *Error) Hint() string { return e.hint }

// detailed is a sentinel with a detail for people, and the cause kept in
// the chain for errors.As.
type detailed struct {
	sentinel error
	detail   string
	cause    error
}

func (d *detailed) Error() string {
	if d.detail == "" {
		return d.sentinel.Error()
	}
	return d.sentinel.Error() + " (" + d.detail + ")"
}

func (d *detailed) Unwrap() []error {
	if d.cause == nil {
		return []error{d.sentinel}
	}
	return []error{d.sentinel, d.cause}
}

func (d *detailed) Kind() errkind.Kind { return errkind.Of(d.sentinel) }

// statusOf returns the HTTP status code of an SDK error, or 0.
func statusOf(err error) int {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	var hs interface{ HTTPStatusCode() int }
	if errors.As(err, &hs) {
		return hs.HTTPStatusCode()
	}
	return 0
}

// codeOf returns the S3 error code of an SDK error, or "".
func codeOf(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// classify turns an error of the SDK into a sentinel of this package
// where its meaning is known, keeping the cause; other errors (network
// failures after the retries, cancellation) are returned unchanged.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var d *detailed
	if errors.As(err, &d) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	code, status := codeOf(err), statusOf(err)
	detail := code
	if status != 0 {
		detail = strconv.Itoa(status) + " " + code
		if code == "" {
			detail = strconv.Itoa(status) + " " + http.StatusText(status)
		}
	}
	var s error
	switch code {
	case "NoSuchKey":
		s = ErrNotFound
	case "NoSuchBucket":
		s = ErrNoBucket
	case "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken",
		"InvalidToken", "TokenRefreshRequired", "AllAccessDisabled", "AccountProblem",
		"XAdminUserNotFound": // versitygw's answer (404) to an unknown access key
		s = ErrAccessDenied
	case "PreconditionFailed":
		s = ErrChanged // the caller turns it into ErrExists for a conditional write
	}
	if s == nil {
		switch status {
		case http.StatusNotFound:
			s = ErrNotFound
		case http.StatusForbidden, http.StatusUnauthorized:
			s = ErrAccessDenied
		case http.StatusPreconditionFailed:
			s = ErrChanged
		}
	}
	if s == nil {
		return err
	}
	return &detailed{sentinel: s, detail: detail, cause: err}
}

// precondition reports whether err is a failed precondition (HTTP 412).
func precondition(err error) bool {
	return statusOf(err) == http.StatusPreconditionFailed || codeOf(err) == "PreconditionFailed"
}
