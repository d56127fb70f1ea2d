package metrics_test

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/drover-dev/drover/metrics"
)

// scrape is one GET of a Registry's /metrics, parsed.
type scrape struct {
	// samples maps `name{label="v",…}` (as printed) to its value text.
	samples map[string]string
	// types maps a family name to its # TYPE.
	types map[string]string
	// help maps a family name to its # HELP.
	help map[string]string
	text string
}

func scrapeRegistry(t *testing.T, r *metrics.Registry) scrape {
	t.Helper()
	h := r.Handler()
	if h == nil {
		t.Fatal("want a /metrics handler with the Prometheus sink on, have nil")
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read scrape: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: want 200, have %d: %s", resp.StatusCode, body)
	}
	s := scrape{samples: map[string]string{}, types: map[string]string{}, help: map[string]string{}, text: string(body)}
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "# TYPE "):
			f := strings.Fields(line)
			s.types[f[2]] = f[3]
		case strings.HasPrefix(line, "# HELP "):
			name, help, _ := strings.Cut(strings.TrimPrefix(line, "# HELP "), " ")
			s.help[name] = help
		case line == "" || strings.HasPrefix(line, "#"):
		default:
			i := strings.LastIndexByte(line, ' ')
			s.samples[line[:i]] = line[i+1:]
		}
	}
	return s
}

// want fails unless series has value.
func (s scrape) want(t *testing.T, series, value string) {
	t.Helper()
	have, ok := s.samples[series]
	if !ok {
		t.Errorf("want %s %s, have no such series in:\n%s", series, value, s.droverLines())
		return
	}
	if have != value {
		t.Errorf("%s: want %s, have %s", series, value, have)
	}
}

// droverLines is the drover_* part of the scrape, for failure messages.
func (s scrape) droverLines() string {
	var b strings.Builder
	for _, l := range strings.Split(s.text, "\n") {
		if strings.Contains(l, "drover_") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// syncBuffer is a bytes.Buffer safe for a writer goroutine and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
