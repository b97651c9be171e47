// SPDX-License-Identifier: Apache-2.0
//
// The Go side of the template engine's crypto cross-check (tests/unit/test_template_crypto_go.sh).
// Random results (keys, certificates, bcrypt hashes, AES ciphertexts) cannot be compared byte
// for byte, so Go checks ours and ours checks Go's:
//
//	cryptocheck gen
//	    prints the data for the cross-check template: the parameters (spec) and values made by
//	    sprig in Go (a CA with an RSA and one with an ECDSA key, AES ciphertexts)
//	cryptocheck check TEMPLATE DATA OURS
//	    renders TEMPLATE with sprig on DATA as a reference, then checks OURS (the same template
//	    rendered by our engine): certificates parse, chain-verify, match their keys and have
//	    the reference's shape (subject and issuer bytes, extensions, algorithms, validity,
//	    SANs); keys are accepted by sprig; our bcrypt hashes verify with x/crypto/bcrypt; our
//	    AES ciphertexts decrypt with sprig and Go's decrypted with ours. One line per check:
//	    "ok - what" or "not ok - what: why".
package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/tls"
	"crypto/x509"
	"encoding/asn1"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"strings"
	"text/template"
	"time"

	"github.com/Masterminds/sprig"
	"golang.org/x/crypto/bcrypt"
)

func render(text string, data interface{}) (string, error) {
	t, err := template.New("t").Funcs(sprig.TxtFuncMap()).Parse(text)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	err = t.Execute(&b, data)
	return b.String(), err
}

func must(s string, err error) string {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	return s
}

const genTemplate = `{{- $ec := genCAWithKey "go ec ca" 20 (genPrivateKey "ecdsa") -}}
{{- $aes := list -}}
{{- range .aes }}{{ $aes = append $aes (dict "password" .password "plaintext" .plaintext "cipher" (encryptAES .password .plaintext)) }}{{ end -}}
{{ toJson (dict "ca" (genCA "go ca" 20) "caEC" $ec "aes" $aes) }}`

var aesCases = []map[string]string{
	{"password": "secret", "plaintext": "hello world"},
	{"password": "", "plaintext": "empty password"},
	{"password": "a password longer than thirty-two bytes, cut by sprig", "plaintext": "ünïcödé ✓"},
	{"password": "k", "plaintext": "exactly16bytes!!"},
	{"password": "k", "plaintext": strings.Repeat("long text ", 100)},
}

func gen() {
	goVals := must(render(genTemplate, map[string]interface{}{"aes": aesCases}))
	var g interface{}
	if err := json.Unmarshal([]byte(goVals), &g); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	spec := map[string]interface{}{
		"caCN":   "crosscheck CA",
		"caDays": 365,
		"cn":     "leaf.example",
		"ips":    []string{"10.1.2.3", "2001:db8::1", "::ffff:192.0.2.1"},
		"dns":    []string{"leaf.example", "*.leaf.example"},
		"days":   30,
		"aes":    aesCases,
		"bcrypt": "correct horse ü",
	}
	out, _ := json.Marshal(map[string]interface{}{"spec": spec, "go": g})
	fmt.Println(string(out))
}

var failed bool

func report(what string, err error) {
	if err != nil {
		failed = true
		fmt.Printf("not ok - %s: %s\n", what, err)
	} else {
		fmt.Printf("ok - %s\n", what)
	}
}

type pair struct{ Cert, Key string }

func parseCert(s string) (*x509.Certificate, error) {
	b, _ := pem.Decode([]byte(s))
	if b == nil || b.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("no CERTIFICATE PEM block")
	}
	return x509.ParseCertificate(b.Bytes)
}

var keyIDs = map[string]bool{"2.5.29.14": true, "2.5.29.35": true}

// sameShape compares everything but the random parts (keys, serial, signature, times).
func sameShape(ours, ref *x509.Certificate) error {
	switch {
	case ours.Version != ref.Version:
		return fmt.Errorf("version %d, Go %d", ours.Version, ref.Version)
	case ours.SignatureAlgorithm != ref.SignatureAlgorithm:
		return fmt.Errorf("signature algorithm %v, Go %v", ours.SignatureAlgorithm, ref.SignatureAlgorithm)
	case ours.PublicKeyAlgorithm != ref.PublicKeyAlgorithm:
		return fmt.Errorf("public key algorithm %v, Go %v", ours.PublicKeyAlgorithm, ref.PublicKeyAlgorithm)
	case !bytes.Equal(ours.RawSubject, ref.RawSubject):
		return fmt.Errorf("subject %x, Go %x", ours.RawSubject, ref.RawSubject)
	case len(ours.Extensions) != len(ref.Extensions):
		return fmt.Errorf("%d extensions, Go %d", len(ours.Extensions), len(ref.Extensions))
	case ours.IsCA != ref.IsCA || ours.BasicConstraintsValid != ref.BasicConstraintsValid ||
		ours.MaxPathLen != ref.MaxPathLen:
		return fmt.Errorf("basic constraints differ")
	case ours.KeyUsage != ref.KeyUsage:
		return fmt.Errorf("key usage %v, Go %v", ours.KeyUsage, ref.KeyUsage)
	case fmt.Sprint(ours.ExtKeyUsage) != fmt.Sprint(ref.ExtKeyUsage):
		return fmt.Errorf("ext key usage %v, Go %v", ours.ExtKeyUsage, ref.ExtKeyUsage)
	case fmt.Sprint(ours.DNSNames) != fmt.Sprint(ref.DNSNames):
		return fmt.Errorf("DNS names %q, Go %q", ours.DNSNames, ref.DNSNames)
	case fmt.Sprint(ours.IPAddresses) != fmt.Sprint(ref.IPAddresses):
		return fmt.Errorf("IPs %v, Go %v", ours.IPAddresses, ref.IPAddresses)
	}
	for i, e := range ours.Extensions {
		r := ref.Extensions[i]
		if !e.Id.Equal(r.Id) || e.Critical != r.Critical {
			return fmt.Errorf("extension %d is %v critical=%v, Go %v critical=%v", i, e.Id, e.Critical, r.Id, r.Critical)
		}
		if !keyIDs[e.Id.String()] && !bytes.Equal(e.Value, r.Value) {
			return fmt.Errorf("extension %v value %x, Go %x", e.Id, e.Value, r.Value)
		}
	}
	if ours.SerialNumber.Sign() <= 0 || ours.SerialNumber.BitLen() > 128 {
		return fmt.Errorf("serial %v not in (0, 2^128)", ours.SerialNumber)
	}
	span, refSpan := ours.NotAfter.Sub(ours.NotBefore), ref.NotAfter.Sub(ref.NotBefore)
	if span != refSpan && span != refSpan-time.Second {
		return fmt.Errorf("validity %v, Go %v", span, refSpan)
	}
	if d := time.Since(ours.NotBefore); d < -time.Minute || d > 30*time.Minute {
		return fmt.Errorf("NotBefore %v is not now", ours.NotBefore)
	}
	return nil
}

func checkCert(name string, ours, ref pair, issuer *x509.Certificate) *x509.Certificate {
	c, err := parseCert(ours.Cert)
	if err != nil {
		report(name+" parses", err)
		return nil
	}
	report(name+" parses", nil)
	_, err = tls.X509KeyPair([]byte(ours.Cert), []byte(ours.Key))
	report(name+" matches its key", err)
	r, err := parseCert(ref.Cert)
	if err != nil {
		report(name+" reference parses", err)
		return c
	}
	report(name+" has sprig's shape", sameShape(c, r))
	if issuer == nil {
		issuer = c
	}
	if !bytes.Equal(c.RawIssuer, issuer.RawSubject) {
		report(name+" names its issuer", fmt.Errorf("issuer %x, want %x", c.RawIssuer, issuer.RawSubject))
	} else {
		report(name+" names its issuer", nil)
	}
	if c.IsCA {
		pub, _ := x509.MarshalPKIXPublicKey(c.PublicKey)
		var spki struct {
			Algo asn1.RawValue
			Key  asn1.BitString
		}
		_, _ = asn1.Unmarshal(pub, &spki)
		h := sha1.Sum(spki.Key.Bytes)
		if !bytes.Equal(c.SubjectKeyId, h[:]) {
			report(name+" subject key id is the key's SHA-1", fmt.Errorf("%x, want %x", c.SubjectKeyId, h))
		} else {
			report(name+" subject key id is the key's SHA-1", nil)
		}
	}
	if issuer != c && !bytes.Equal(c.AuthorityKeyId, issuer.SubjectKeyId) {
		report(name+" authority key id", fmt.Errorf("%x, want %x", c.AuthorityKeyId, issuer.SubjectKeyId))
	} else if issuer != c {
		report(name+" authority key id", nil)
	}
	roots := x509.NewCertPool()
	roots.AddCert(issuer)
	opts := x509.VerifyOptions{Roots: roots, CurrentTime: c.NotBefore.Add(time.Second),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}
	if len(c.DNSNames) > 0 {
		opts.DNSName = c.DNSNames[0]
	}
	_, err = c.Verify(opts)
	report(name+" verifies against its issuer", err)
	return c
}

type dsaKeyFormat struct {
	Version       int
	P, Q, G, Y, X *big.Int
}

func checkKey(name, ours, ref string) {
	b, _ := pem.Decode([]byte(ours))
	if b == nil {
		report(name+" key is PEM", fmt.Errorf("no PEM data"))
		return
	}
	if r, _ := pem.Decode([]byte(ref)); r != nil && r.Type != b.Type {
		report(name+" key PEM type", fmt.Errorf("%s, Go %s", b.Type, r.Type))
		return
	}
	var err error
	switch name {
	case "rsa":
		var k *rsa.PrivateKey
		if k, err = x509.ParsePKCS1PrivateKey(b.Bytes); err == nil {
			err = k.Validate()
			if err == nil && k.N.BitLen() != 4096 {
				err = fmt.Errorf("%d bits, want 4096", k.N.BitLen())
			}
		}
	case "ecdsa":
		var k *ecdsa.PrivateKey
		if k, err = x509.ParseECPrivateKey(b.Bytes); err == nil && k.Curve.Params().Name != "P-256" {
			err = fmt.Errorf("curve %s", k.Curve.Params().Name)
		}
	case "ed25519":
		var k interface{}
		if k, err = x509.ParsePKCS8PrivateKey(b.Bytes); err == nil {
			if _, ok := k.(ed25519.PrivateKey); !ok {
				err = fmt.Errorf("PKCS#8 holds %T", k)
			}
		}
	case "dsa":
		var k dsaKeyFormat
		if _, err = asn1.Unmarshal(b.Bytes, &k); err == nil {
			y := new(big.Int).Exp(k.G, k.X, k.P)
			switch {
			case k.P.BitLen() != 2048 || k.Q.BitLen() != 256:
				err = fmt.Errorf("L=%d N=%d, want 2048/256", k.P.BitLen(), k.Q.BitLen())
			case y.Cmp(k.Y) != 0:
				err = fmt.Errorf("y is not g^x mod p")
			}
		}
	}
	report(name+" key is a valid Go key", err)
	// sprig itself must accept it (DSA keys parse, then fail as signers, as in Go)
	_, err = render(`{{ genSelfSignedCertWithKey "k" nil nil 1 .k }}`, map[string]string{"k": ours})
	if name == "dsa" && err != nil && strings.Contains(err.Error(), "does not implement crypto.Signer") {
		err = nil
	}
	report(name+" key is accepted by sprig", err)
}

func check(tmplPath, dataPath, oursPath string) {
	tmpl, err := os.ReadFile(tmplPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var data map[string]interface{}
	raw, _ := os.ReadFile(dataPath)
	if err := json.Unmarshal(raw, &data); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	type result struct {
		CA, Leaf, Self, EcCA, EdLeaf, GoLeaf, GoECLeaf pair
		Keys                                           map[string]string
		AES                                            []map[string]string
		FromGo                                         []map[string]string
		Bcrypt                                         map[string]string
		Htpasswd                                       string
	}
	var ours, ref result
	raw, _ = os.ReadFile(oursPath)
	if err := json.Unmarshal(raw, &ours); err != nil {
		report("our output is JSON", err)
		return
	}
	refText := must(render(string(tmpl), data))
	if err := json.Unmarshal([]byte(refText), &ref); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	goData := data["go"].(map[string]interface{})
	goCA, _ := parseCert(goData["ca"].(map[string]interface{})["Cert"].(string))
	goEC, _ := parseCert(goData["caEC"].(map[string]interface{})["Cert"].(string))

	ca := checkCert("genCA", ours.CA, ref.CA, nil)
	checkCert("genSignedCert", ours.Leaf, ref.Leaf, ca)
	checkCert("genSelfSignedCert", ours.Self, ref.Self, nil)
	ec := checkCert("genCAWithKey ecdsa", ours.EcCA, ref.EcCA, nil)
	checkCert("genSignedCertWithKey ed25519", ours.EdLeaf, ref.EdLeaf, ec)
	checkCert("genSignedCert under Go's CA", ours.GoLeaf, ref.GoLeaf, goCA)
	checkCert("genSignedCertWithKey ecdsa under Go's ECDSA CA", ours.GoECLeaf, ref.GoECLeaf, goEC)
	for _, name := range []string{"rsa", "ecdsa", "ed25519", "dsa"} {
		if k, ok := ours.Keys[name]; ok {
			checkKey(name, k, ref.Keys[name])
		} else {
			report(name+" key present", fmt.Errorf("missing"))
		}
	}
	for i, a := range ours.AES {
		got, err := render(`{{ decryptAES .password .cipher }}`, a)
		if err == nil && got != a["plaintext"] {
			err = fmt.Errorf("sprig decrypts %q", got)
		}
		report(fmt.Sprintf("sprig decrypts our encryptAES #%d", i+1), err)
	}
	if len(ours.FromGo) == 0 {
		report("our decryptAES of Go's ciphertexts", fmt.Errorf("no results"))
	}
	for i, a := range ours.FromGo {
		var err error
		if a["got"] != a["plaintext"] {
			err = fmt.Errorf("got %q", a["got"])
		}
		report(fmt.Sprintf("our decryptAES of Go's encryptAES #%d", i+1), err)
	}
	hash := ours.Bcrypt["hash"]
	err = bcrypt.CompareHashAndPassword([]byte(hash), []byte(ours.Bcrypt["password"]))
	if err == nil && !strings.HasPrefix(hash, "$2a$10$") {
		err = fmt.Errorf("%s is not $2a$ cost 10", hash[:7])
	}
	report("x/crypto/bcrypt verifies our bcrypt", err)
	err = bcrypt.CompareHashAndPassword([]byte(hash), []byte("wrong"))
	if err == nil {
		err = fmt.Errorf("a wrong password verifies")
	} else {
		err = nil
	}
	report("our bcrypt rejects another password", err)
	user, h, ok := strings.Cut(ours.Htpasswd, ":")
	err = nil
	if !ok || user != "admin" {
		err = fmt.Errorf("not admin:hash")
	} else {
		err = bcrypt.CompareHashAndPassword([]byte(h), []byte(ours.Bcrypt["password"]))
	}
	report("x/crypto/bcrypt verifies our htpasswd", err)
}

func main() {
	switch {
	case len(os.Args) == 2 && os.Args[1] == "gen":
		gen()
	case len(os.Args) == 5 && os.Args[1] == "check":
		check(os.Args[2], os.Args[3], os.Args[4])
	default:
		fmt.Fprintln(os.Stderr, "usage: cryptocheck gen | cryptocheck check TEMPLATE DATA OURS")
		os.Exit(2)
	}
	if failed {
		os.Exit(1)
	}
}
