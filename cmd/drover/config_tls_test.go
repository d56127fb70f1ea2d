package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// writeSelfSigned writes a self-signed certificate and its key to dir as
// name.pem and name.key.
func writeSelfSigned(t *testing.T, dir, name string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+".key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// TestConfigCheckRefusesACertificateAndKeyThatDoNotMatch: config check
// loads web.tls_cert with web.tls_key and refuses a key that is not the
// certificate's (exit 2, naming the key), rather than drover web exiting
// at listen (issue 41); the matching pair passes.
func TestConfigCheckRefusesACertificateAndKeyThatDoNotMatch(t *testing.T) {
	dir := t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	certA, keyA := writeSelfSigned(t, dir, "a")
	_, keyB := writeSelfSigned(t, dir, "b")
	checkFailure(t, runDrover(t, append(env, "DROVER_WEB_TLS_CERT="+certA, "DROVER_WEB_TLS_KEY="+keyB), "", "config", "check"),
		exitUsage, []string{"web.tls_key", "are not a pair"})
	if r := runDrover(t, append(env, "DROVER_WEB_TLS_CERT="+certA, "DROVER_WEB_TLS_KEY="+keyA), "", "config", "check"); r.code != 0 {
		t.Fatalf("a matching certificate and key: want valid, have:\n%s", r)
	}
}
