package mcp

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
)

// The assertion is a JWS a server can check with the client's public key,
// naming the client as issuer and subject and the authorization server as
// audience.
func TestJWTAssertion(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	j, err := newJWTCredentials("svc", string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})), nil)
	if err != nil {
		t.Fatal(err)
	}
	jws, err := j.assertion("https://as.example")
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(jws, ".")
	if len(parts) != 3 {
		t.Fatalf("assertion %q is not a compact JWS", jws)
	}
	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if len(sig) != 64 || !ecdsa.Verify(&key.PublicKey, digest[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		t.Fatal("the signature does not verify with the public key")
	}
	var claims map[string]any
	body, _ := base64.RawURLEncoding.DecodeString(parts[1])
	if err := json.Unmarshal(body, &claims); err != nil {
		t.Fatal(err)
	}
	if claims["iss"] != "svc" || claims["sub"] != "svc" || claims["aud"] != "https://as.example" || claims["jti"] == "" {
		t.Errorf("claims = %v", claims)
	}
	if _, err := newJWTCredentials("svc", "not a key", nil); err == nil || !strings.Contains(err.Error(), "PEM") {
		t.Errorf("a non-PEM key = %v, want an error saying PEM", err)
	}
}
