// Package tlserr tells the errors of a TLS certificate that does not
// verify, for the clients of object stores and htsget servers: another
// attempt meets the same certificate, so they fail at once with a hint.
package tlserr

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
)

// Untrusted reports whether err is a server's certificate that does not
// verify here: an authority not trusted, another host's name, an expired
// or otherwise invalid certificate.
func Untrusted(err error) bool {
	var cv *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var he x509.HostnameError
	var ci x509.CertificateInvalidError
	return errors.As(err, &cv) || errors.As(err, &ua) || errors.As(err, &he) || errors.As(err, &ci)
}
