package egress

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
)

// Words says in words why a connection or an exchange over it failed, naming the address it dialed
// when the error carries one: "the connection to 203.0.113.7:443 was refused", "no answer within the
// timeout", "the host name hooks.example did not resolve". An error of the guard (ErrBlocked) and any
// error it does not recognise keep their own text.
func Words(err error) string {
	if err == nil {
		return ""
	}
	if errors.Is(err, ErrBlocked) {
		return err.Error()
	}
	at := ""
	var op *net.OpError
	if errors.As(err, &op) && op.Addr != nil {
		at = " to " + op.Addr.String()
	}
	var dns *net.DNSError
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var record tls.RecordHeaderError
	switch {
	case errors.As(err, &dns):
		if dns.IsTimeout {
			return "the host name " + dns.Name + " did not resolve within the timeout"
		}
		return "the host name " + dns.Name + " did not resolve"
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) || isTimeout(err):
		return "no answer within the timeout"
	case errors.Is(err, context.Canceled):
		return "the attempt was canceled"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "the connection" + at + " was refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "the connection" + at + " was reset"
	case errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH):
		return "no route" + strings.Replace(at, " to ", " to host ", 1) + ": the network is unreachable"
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return "the connection" + at + " was closed before an answer"
	case errors.As(err, &unknownCA):
		return "the TLS certificate is signed by an unknown authority"
	case errors.As(err, &hostname):
		return "the TLS certificate is not valid for " + hostname.Host
	case errors.As(err, &invalid):
		return "the TLS certificate is not valid: " + invalid.Error()
	case errors.As(err, &record):
		return "the TLS handshake failed: the server does not speak TLS"
	}
	return err.Error()
}

// isTimeout reports whether err is a network timeout.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
