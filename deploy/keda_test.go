package deploy_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v2"

	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/scaler"
)

// kedaObject holds the fields of the KEDA overlay's objects the test reads.
type kedaObject struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Spec struct {
		ScaleTargetRef struct {
			Name string `yaml:"name"`
		} `yaml:"scaleTargetRef"`
		MinReplicaCount *int `yaml:"minReplicaCount"`
		Triggers        []struct {
			Type              string            `yaml:"type"`
			Metadata          map[string]string `yaml:"metadata"`
			AuthenticationRef struct {
				Name string `yaml:"name"`
			} `yaml:"authenticationRef"`
		} `yaml:"triggers"`
		SecretTargetRef []struct {
			Parameter string `yaml:"parameter"`
		} `yaml:"secretTargetRef"`
		Ports []struct {
			Port int `yaml:"port"`
		} `yaml:"ports"`
		Replicas *int `yaml:"replicas"`
		Template struct {
			Spec struct {
				Containers []struct {
					Args []string `yaml:"args"`
					Env  []struct {
						Name  string `yaml:"name"`
						Value string `yaml:"value"`
					} `yaml:"env"`
					VolumeMounts []struct {
						MountPath string `yaml:"mountPath"`
					} `yaml:"volumeMounts"`
				} `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

func readKeda(t *testing.T) map[string]kedaObject {
	t.Helper()
	var kust struct {
		Resources []string `yaml:"resources"`
	}
	readYAML(t, "kubernetes/keda/kustomization.yaml", &kust)
	objs := map[string]kedaObject{}
	for _, r := range kust.Resources {
		if r == "../" {
			continue // the base, checked by TestKubernetesWorkersDrainAndProbeTheAdminEndpoints
		}
		b, err := os.ReadFile(filepath.Join("kubernetes/keda", r))
		if err != nil {
			t.Fatalf("kustomization resource: %v", err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		for {
			var o kedaObject
			err := dec.Decode(&o)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("parse %s: %v", r, err)
			}
			objs[o.Kind+"/"+o.Metadata.Name] = o
		}
	}
	return objs
}

// TestKedaOverlayScalesTheWorkersThroughTheScaler: the ScaledObject scales
// the base's worker Deployment with the external-push trigger, its metadata
// is what the scaler accepts, its address is the scaler's Service, and the
// scaler listens there with the mutual TLS the trigger authenticates with.
func TestKedaOverlayScalesTheWorkersThroughTheScaler(t *testing.T) {
	objs := readKeda(t)
	so, ok := objs["ScaledObject/drover-worker"]
	if !ok {
		t.Fatalf("want ScaledObject/drover-worker")
	}
	if so.Spec.ScaleTargetRef.Name != "drover-worker" {
		t.Errorf("want the ScaledObject to scale drover-worker (../worker.yaml), have %q", so.Spec.ScaleTargetRef.Name)
	}
	if len(so.Spec.Triggers) != 1 || so.Spec.Triggers[0].Type != "external-push" {
		t.Fatalf("want one external-push trigger, have %+v", so.Spec.Triggers)
	}
	tr := so.Spec.Triggers[0]
	if _, err := scaler.ParseSpec(tr.Metadata); err != nil {
		t.Errorf("the trigger's metadata: %v", err)
	}
	host, port, err := net.SplitHostPort(tr.Metadata["scalerAddress"])
	if err != nil || !strings.HasPrefix(host, "drover-scaler.") {
		t.Fatalf("want scalerAddress drover-scaler.<namespace>…:port, have %q", tr.Metadata["scalerAddress"])
	}
	svc := objs["Service/drover-scaler"]
	if len(svc.Spec.Ports) != 1 || port != strconv.Itoa(svc.Spec.Ports[0].Port) {
		t.Errorf("want the Service's port %s, have %+v", port, svc.Spec.Ports)
	}
	auth := objs["TriggerAuthentication/"+tr.AuthenticationRef.Name]
	params := map[string]bool{}
	for _, r := range auth.Spec.SecretTargetRef {
		params[r.Parameter] = true
	}
	if !params["caCert"] || !params["tlsClientCert"] || !params["tlsClientKey"] {
		t.Errorf("want KEDA to present a client certificate (caCert, tlsClientCert, tlsClientKey), have %v", params)
	}

	dep, ok := objs["Deployment/drover-scaler"]
	if !ok || dep.Spec.Replicas == nil || *dep.Spec.Replicas != 1 {
		t.Fatalf("want Deployment/drover-scaler with one replica (the gauges are exported once)")
	}
	c := dep.Spec.Template.Spec.Containers[0]
	var env []string
	dir := t.TempDir()
	certPEM, keyPEM := selfSigned(t)
	for _, e := range c.Env {
		v := e.Value
		if strings.HasSuffix(e.Name, "_FILE") { // the Secret's files, stood in for
			mounted := false
			for _, m := range c.VolumeMounts {
				mounted = mounted || strings.HasPrefix(v, m.MountPath+"/")
			}
			if !mounted {
				t.Errorf("%s=%s is not under a volume mount", e.Name, v)
			}
			v = filepath.Join(dir, filepath.Base(v))
			// A real pair: the settings refuse a certificate and key
			// that do not match (the CA file gets the certificate too).
			content := certPEM
			if strings.HasSuffix(v, ".key") {
				content = keyPEM
			}
			if err := os.WriteFile(v, content, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		env = append(env, e.Name+"="+v)
	}
	cfg, err := config.Load("", env, nil, "host")
	if err != nil {
		t.Fatalf("the scaler's settings: %v", err)
	}
	if _, p, _ := net.SplitHostPort(cfg.Scaler.Addr); p != strconv.Itoa(svc.Spec.Ports[0].Port) {
		t.Errorf("want the scaler to listen on the Service's port, have %q", cfg.Scaler.Addr)
	}
	if !cfg.Scaler.TLS.Enabled || cfg.Scaler.TLS.CAFile == "" {
		t.Errorf("want mutual TLS on the scaler, have %+v", cfg.Scaler.TLS)
	}
}

// selfSigned returns a self-signed certificate and its key, PEM-encoded:
// what the Secret's files hold.
func selfSigned(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "drover-scaler"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}
