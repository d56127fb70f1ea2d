package executor

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover"
)

func TestExecConfigValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cfg   Config
		field string
	}{
		{Config{KillGrace: -time.Second}, "KillGrace"},
		{Config{OutputLimit: -1}, "OutputLimit"},
		{Config{Env: []string{"A=1", "no-equals"}}, "Env[1]"},
		{Config{Env: []string{"=1"}}, "Env[0]"},
		{Config{Self: "/no/such/binary"}, "Self"},
		{Config{Self: "/tmp"}, "Self"},
	}
	for _, tt := range tests {
		_, err := New(tt.cfg)
		if !errors.Is(err, drover.ErrInvalidConfig) || !strings.Contains(err.Error(), tt.field) {
			t.Errorf("%+v: want ErrInvalidConfig naming %s, have %v", tt.cfg, tt.field, err)
		}
	}
}

func TestExecConfigDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := Config{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.KillGrace != DefaultKillGrace || cfg.OutputLimit != DefaultOutputLimit || cfg.Self != DefaultSelf ||
		cfg.Logger == nil || cfg.Clock == nil {
		t.Errorf("want documented defaults, have %+v", cfg)
	}
}

func TestBaseEnvDropsDroverVariablesAndDuplicates(t *testing.T) {
	t.Parallel()
	have := baseEnv([]string{"A=1", "DROVER_CHILD=go", "B=2", "A=3", "DROVER_REDIS=x:1", "DROVERX=kept"})
	want := []string{"A=3", "B=2", "DROVERX=kept"}
	if !slices.Equal(have, want) {
		t.Errorf("want %q, have %q", want, have)
	}
}

func TestTaskEnvOrderAndOverrides(t *testing.T) {
	t.Parallel()
	task := testTask(t, "job", drover.TaskRoute{Command: []string{"x"}, Env: map[string]string{"B": "route", "HOME": "/route", "Z": "z"}})
	id := &identity{env: []string{"HOME=/home/u", "USER=u", "LOGNAME=u"}}
	env, err := taskEnv([]string{"A=1", "B=2", "HOME=/root", "USER=root"}, id, task, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"A=1", "USER=u", "LOGNAME=u", "B=route", "HOME=/route", "Z=z",
		"DROVER_QUEUE=emails", "DROVER_TASK=job", "DROVER_MESSAGE_ID=" + task.Message.ID,
		"DROVER_ATTEMPT=2", "DROVER_POSITION=1735787045123456"}
	if !slices.Equal(env, want) {
		t.Errorf("want\n%q\nhave\n%q", want, env)
	}
}
