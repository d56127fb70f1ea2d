package scaler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/drover-dev/drover/scaler/externalscaler"
)

// Metric names reported by GetMetricSpec (KEDA puts its own "s<n>-" in
// front when it builds the HPA).
const (
	MetricLag       = "drover-lag"
	MetricOldestAge = "drover-oldest-age-seconds"
)

// DefaultPollInterval is the longest StreamIsActive waits before measuring
// again without a wake-up.
const DefaultPollInterval = time.Second

// Config configures a Server. The zero value of every optional field means
// its default.
type Config struct {
	// Fleet is read for queue names and backlogs. Required.
	Fleet Fleet
	// Wakeups, when set, returns a channel of queue names, one per enqueue
	// (queue.Listener.AllWakeups), closed when ctx ends. StreamIsActive measures
	// at once when a name of its selection arrives. Optional: without it
	// streams only poll.
	Wakeups func(ctx context.Context) (<-chan string, error)
	// PollInterval bounds how long a stream goes without measuring.
	// Default 1s.
	PollInterval time.Duration
	// Logger. Default: a null logger.
	Logger hclog.Logger
}

// Server implements pb.ExternalScalerServer. Run must be running for
// wake-ups to reach streams.
type Server struct {
	pb.UnimplementedExternalScalerServer
	cfg Config

	mu      sync.Mutex
	streams map[*stream]struct{} // open StreamIsActive calls
}

// stream is one open StreamIsActive call.
type stream struct {
	sel Selection
	// kick holds at most one pending "measure now"; a full channel already
	// has one pending, so a dropped send loses nothing.
	kick chan struct{}
}

var _ pb.ExternalScalerServer = (*Server)(nil)

// New validates cfg and returns a Server.
func New(cfg Config) (*Server, error) {
	if cfg.Fleet == nil {
		return nil, errors.New("scaler: Config.Fleet is required")
	}
	if cfg.PollInterval < 0 {
		return nil, fmt.Errorf("scaler: Config.PollInterval must be ≥ 0, have %s", cfg.PollInterval)
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	return &Server{cfg: cfg, streams: map[*stream]struct{}{}}, nil
}

// Run relays enqueue wake-ups to the open streams until ctx ends. Without
// Config.Wakeups, or when subscribing fails, it only waits (streams poll).
func (s *Server) Run(ctx context.Context) error {
	if s.cfg.Wakeups == nil {
		<-ctx.Done()
		return nil
	}
	ch, err := s.cfg.Wakeups(ctx)
	if err != nil {
		s.cfg.Logger.Warn("no enqueue wake-ups; streams poll", "every", s.cfg.PollInterval, "error", err)
		<-ctx.Done()
		return nil
	}
	for q := range ch {
		s.mu.Lock()
		for st := range s.streams {
			if st.sel.Match(q) {
				select {
				case st.kick <- struct{}{}:
				default:
				}
			}
		}
		s.mu.Unlock()
	}
	return nil
}

// measure parses the metadata and measures its selection, translating
// failures into gRPC status errors.
func (s *Server) measure(ctx context.Context, ref *pb.ScaledObjectRef) (Spec, Figures, error) {
	sp, err := ParseSpec(ref.GetScalerMetadata())
	if err != nil {
		return Spec{}, Figures{}, status.Error(codes.InvalidArgument, err.Error())
	}
	fig, err := s.figures(ctx, sp)
	return sp, fig, err
}

func (s *Server) figures(ctx context.Context, sp Spec) (Figures, error) {
	fig, err := Measure(ctx, s.cfg.Fleet, sp.Selection)
	switch {
	case err == nil:
		return fig, nil
	case errors.Is(err, ErrNoQueues), errors.Is(err, ErrUnknownQueue):
		return Figures{}, status.Error(codes.NotFound, err.Error())
	case ctx.Err() != nil:
		return Figures{}, status.FromContextError(ctx.Err()).Err()
	default:
		return Figures{}, status.Error(codes.Unavailable, err.Error())
	}
}

// IsActive reports whether the selection's lag is above activationLag.
func (s *Server) IsActive(ctx context.Context, ref *pb.ScaledObjectRef) (*pb.IsActiveResponse, error) {
	sp, fig, err := s.measure(ctx, ref)
	if err != nil {
		return nil, err
	}
	return &pb.IsActiveResponse{Result: fig.Active(sp)}, nil
}

// StreamIsActive sends the selection's activity at once and then each time
// it changes, until KEDA closes the stream.
func (s *Server) StreamIsActive(ref *pb.ScaledObjectRef, out pb.ExternalScaler_StreamIsActiveServer) error {
	ctx := out.Context()
	sp, fig, err := s.measure(ctx, ref)
	if err != nil {
		return err
	}
	st := &stream{sel: sp.Selection, kick: make(chan struct{}, 1)}
	s.mu.Lock()
	s.streams[st] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.streams, st)
		s.mu.Unlock()
	}()

	active := fig.Active(sp)
	if err := out.Send(&pb.IsActiveResponse{Result: active}); err != nil {
		return err
	}
	t := time.NewTicker(s.cfg.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-st.kick:
		case <-t.C:
		}
		fig, err := s.figures(ctx, sp)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			s.cfg.Logger.Warn("measure for stream", "selection", sp.Selection, "error", err)
			continue
		}
		if now := fig.Active(sp); now != active {
			active = now
			if err := out.Send(&pb.IsActiveResponse{Result: active}); err != nil {
				return err
			}
		}
	}
}

// GetMetricSpec returns the lag metric with the target lag, and the oldest
// age metric when targetOldestAgeSeconds is set. It validates the metadata
// and that the selection matches a queue.
func (s *Server) GetMetricSpec(ctx context.Context, ref *pb.ScaledObjectRef) (*pb.GetMetricSpecResponse, error) {
	sp, _, err := s.measure(ctx, ref)
	if err != nil {
		return nil, err
	}
	specs := []*pb.MetricSpec{{MetricName: MetricLag, TargetSize: sp.TargetLag, TargetSizeFloat: float64(sp.TargetLag)}}
	if sp.TargetOldestAge > 0 {
		secs := sp.TargetOldestAge.Seconds()
		specs = append(specs, &pb.MetricSpec{MetricName: MetricOldestAge, TargetSize: int64(max(1, secs)), TargetSizeFloat: secs})
	}
	return &pb.GetMetricSpecResponse{MetricSpecs: specs}, nil
}

// GetMetrics returns the current value of one metric of GetMetricSpec.
func (s *Server) GetMetrics(ctx context.Context, req *pb.GetMetricsRequest) (*pb.GetMetricsResponse, error) {
	sp, err := ParseSpec(req.GetScaledObjectRef().GetScalerMetadata())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	var v float64
	switch name := req.GetMetricName(); {
	case matchesMetric(name, MetricLag):
		fig, err := s.figures(ctx, sp)
		if err != nil {
			return nil, err
		}
		v = float64(fig.LagMetric(sp.TargetLag))
	case matchesMetric(name, MetricOldestAge) && sp.TargetOldestAge > 0:
		fig, err := s.figures(ctx, sp)
		if err != nil {
			return nil, err
		}
		v = fig.AgeMetric(sp.TargetOldestAge)
	default:
		return nil, status.Errorf(codes.InvalidArgument, "scaler: unknown metric %q (want %s, or %s with %s)", name, MetricLag, MetricOldestAge, KeyTargetOldestAgeSeconds)
	}
	return &pb.GetMetricsResponse{MetricValues: []*pb.MetricValue{{
		MetricName: req.GetMetricName(), MetricValue: int64(v), MetricValueFloat: v,
	}}}, nil
}

// matchesMetric accepts the name as given by GetMetricSpec or with the
// "s<n>-" prefix some KEDA versions pass back.
func matchesMetric(have, want string) bool {
	if have == want {
		return true
	}
	if len(have) > len(want) && have[len(have)-len(want):] == want && have[0] == 's' {
		i := 1
		for i < len(have) && have[i] >= '0' && have[i] <= '9' {
			i++
		}
		return i > 1 && have[i:] == "-"+want
	}
	return false
}
