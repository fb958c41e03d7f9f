package natsdest_test

// Tests against a nats-server of the test's own (credentials, TLS), started on a spare port and
// stopped by its pid.

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks/destination"
	"github.com/smartdrop/webhooks/destination/destinationtest"
	"github.com/smartdrop/webhooks/natsdest"
)

// startServer starts nats-server with JetStream and args on a spare loopback port, stopped when t
// ends, and returns its host:port. Without the binary a test skips, except in CI, where it fails.
func startServer(t *testing.T, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath("nats-server")
	if err != nil {
		bin = "/usr/sbin/nats-server"
	}
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("nats-server is not installed: CI runs the tests that start one")
		}
		t.Skip("needs the nats-server binary")
	}
	addr := freeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	var out bytes.Buffer
	cmd := exec.Command(bin, append([]string{"-a", "127.0.0.1", "-p", port, "-js", "-sd", t.TempDir()}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // the process this test started, by its pid
		<-exited
	})
	for i := 0; ; i++ {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close()
			return addr
		}
		select {
		case <-exited:
			t.Fatalf("nats-server exited: %s", out.String())
		case <-time.After(50 * time.Millisecond):
		}
		if i > 600 {
			t.Fatalf("nats-server did not listen on %s within 30s: %s", addr, out.String())
		}
	}
}

// adminStream makes a stream on the server at raw (a URL with its credentials) with opts, taking
// subject.
func adminStream(t *testing.T, raw, subject string, opts ...nats.Option) {
	t.Helper()
	nc, err := nats.Connect(raw, append(opts, nats.Timeout(10*time.Second))...)
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = createStream(ctx, t, js, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{subject}, Duplicates: dedupWindow})
	require.NoError(t, err)
}

// TestCredentials: the URL's user and password (or token) reach the server; credentials it refuses
// fail the attempt as a refusal (not counted by the breaker), in words without the password.
func TestCredentials(t *testing.T) {
	t.Parallel()
	const password = "s3cret-Nats-pw"
	addr := startServer(t, "--user", "tenant", "--pass", password)
	adminStream(t, "nats://tenant:"+password+"@"+addr, "orders.paid")
	tokenAddr := startServer(t, "--auth", password)
	adminStream(t, "nats://"+password+"@"+tokenAddr, "orders.paid")
	d := newDest(t, natsdest.Options{})
	send := func(raw string) (*destination.Message, error) {
		u, err := url.Parse(raw)
		require.NoError(t, err)
		m := destinationtest.Message(u, "msg_1", []byte(`{}`))
		return m, d.Send(context.Background(), m)
	}
	m, err := send("nats://tenant:" + password + "@" + addr + "/orders.paid")
	require.NoError(t, err)
	assert.Equal(t, "stream ORDERS, sequence 1", m.Response)
	m, err = send("nats://" + password + "@" + tokenAddr + "/orders.paid")
	require.NoError(t, err, "a user without a password is a token")
	assert.Equal(t, "stream ORDERS, sequence 1", m.Response)

	for _, raw := range []string{"nats://tenant:wrong-" + password + "@" + addr + "/orders.paid", "nats://" + addr + "/orders.paid"} {
		_, err = send(raw)
		require.Error(t, err, raw)
		kind, _ := destination.Classify(err)
		assert.Equal(t, destination.Rejected, kind, raw)
		assert.Equal(t, "the NATS server at "+addr+" refused the credentials: correct the user and password (or token) in the webhook's URL",
			err.Error())
		assert.NotContains(t, err.Error(), password)
	}
}

// TestTLS: a tls:// URL connects with TLS, verified with Options.TLSConfig; a certificate it does
// not trust, or a nats:// URL to a server that wants TLS without the roots to verify it, fails in
// words.
func TestTLS(t *testing.T) {
	t.Parallel()
	certFile, keyFile, roots := selfSigned(t)
	addr := startServer(t, "--tls", "--tlscert", certFile, "--tlskey", keyFile)
	adminStream(t, "tls://"+addr, "orders.paid", nats.Secure(&tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}))
	target, err := url.Parse("tls://" + addr + "/orders.paid")
	require.NoError(t, err)

	d := newDest(t, natsdest.Options{TLSConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}})
	m := destinationtest.Message(target, "msg_1", []byte(`{}`))
	require.NoError(t, d.Send(context.Background(), m))
	assert.Equal(t, "stream ORDERS, sequence 1", m.Response)

	untrusting := newDest(t, natsdest.Options{})
	err = untrusting.Send(context.Background(), destinationtest.Message(target, "msg_2", []byte(`{}`)))
	assert.EqualError(t, err, "cannot connect to the NATS server at "+addr+": the TLS certificate is signed by an unknown authority")
	plain := *target
	plain.Scheme = "nats"
	err = d.Send(context.Background(), destinationtest.Message(&plain, "msg_3", []byte(`{}`)))
	assert.EqualError(t, err, "cannot connect to the NATS server at "+addr+": the TLS certificate is signed by an unknown authority",
		"a nats:// URL upgrades with the system's roots")
}

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key to files, and returns them
// and a pool that trusts it.
func selfSigned(t *testing.T) (certFile, keyFile string, roots *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "natsdest test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600))
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	roots = x509.NewCertPool()
	roots.AddCert(cert)
	return certFile, keyFile, roots
}

// TestPublishPermissionDenied: a publish the server denies the URL's user fails as a refusal, in words
// that name the permission to give, once the ack has not come (the server only reports the
// violation).
func TestPublishPermissionDenied(t *testing.T) {
	t.Parallel()
	conf := filepath.Join(t.TempDir(), "server.conf")
	require.NoError(t, os.WriteFile(conf, []byte(`authorization {
  users = [
    {user: admin, password: adminpw}
    {user: limited, password: limitedpw, permissions: {publish: {deny: ["orders.denied"]}}}
  ]
}
`), 0o600))
	addr := startServer(t, "-c", conf)
	adminStream(t, "nats://admin:adminpw@"+addr, "orders.*")
	d := newDest(t, natsdest.Options{})
	send := func(subject string) error {
		u, err := url.Parse("nats://limited:limitedpw@" + addr + "/" + subject)
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return d.Send(ctx, destinationtest.Message(u, "msg_"+subject, []byte(`{}`)))
	}
	require.NoError(t, send("orders.ok"))
	err := send("orders.denied")
	require.Error(t, err)
	kind, _ := destination.Classify(err)
	assert.Equal(t, destination.Rejected, kind)
	assert.Regexp(t, `^the NATS server at `+addr+` refused: permissions violation: Permissions Violation for Publish to "?orders\.denied"?: `+
		`give the URL's user permission to publish to "orders.denied" and to subscribe to _INBOX.> \(the acks\)$`, err.Error())
	assert.NotContains(t, err.Error(), "limitedpw")
}
