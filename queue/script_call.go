package queue

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// The enqueue calls every message takes (enqueueAlone, enqueueMany) build
// their script command themselves instead of going through
// redis.Script.Run, which cost a lone enqueue 14 of its 22 allocations
// (docs/decisions.md, "Issue 43: a lone enqueue's client CPU"): Run takes
// its arguments as a variadic slice, copies them with the keys behind
// "EVALSHA <sha> <numkeys>" into a second one, boxes every string and byte
// slice in an interface (an allocation each), and its generic Cmd boxes
// the reply. Here the command's arguments are built in one slice, strings
// that outlive the call are boxed once or passed by pointer (go-redis
// writes a *string, a *int64 and an encoding.BinaryMarshaler as their
// values, and an interface holding a pointer needs no allocation), and the
// reply is read into a typed command (IntCmd, IntSliceCmd). What Redis
// receives is the same command, byte for byte.

// The SHA1s of the scripts sent so, boxed once.
var (
	enqueueOneSHA    any = enqueueOneScript.Hash()
	enqueueManySHA   any = enqueueManyScript.Hash()
	enqueueSpreadSHA any = enqueueSpreadScript.Hash()
)

// appendScriptArgs appends to dst the head of an EVALSHA of the script
// whose SHA1 is sha (boxed) with keys: the command, the SHA1, the number of
// keys and the keys, each as a pointer into keys, which must therefore not
// change until the call has been sent. The script's arguments follow.
func appendScriptArgs(dst []any, sha any, keys []string) []any {
	dst = append(dst, "evalsha", sha, len(keys))
	for i := range keys {
		dst = append(dst, &keys[i])
	}
	return dst
}

// processor is the part of the Redis client a script call uses.
type processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// runScript sends newCmd(args), an EVALSHA built by appendScriptArgs and
// the script's arguments, and when Redis does not know the script
// (NOSCRIPT: its first use on this server, or after a restart or a SCRIPT
// FLUSH) sends it again as an EVAL of src, as redis.Script.Run does. It
// returns the command that ran last, its error set when it failed; it
// rewrites args[0] and args[1] for the EVAL.
func runScript[C redis.Cmder](ctx context.Context, rdb processor, newCmd func(context.Context, ...any) C, args []any, src string) C {
	cmd := newCmd(ctx, args...)
	cmd.SetFirstKeyPos(3) // where a Cluster client finds the key that routes it
	_ = rdb.Process(ctx, cmd)
	if isNoScript(cmd.Err()) {
		args[0], args[1] = "eval", src
		cmd = newCmd(ctx, args...)
		cmd.SetFirstKeyPos(3)
		_ = rdb.Process(ctx, cmd)
	}
	return cmd
}

// envelopeArg is an envelope as a script argument without a copy or a
// box of its own: passed as a pointer, go-redis writes its bytes through
// MarshalBinary.
type envelopeArg []byte

// MarshalBinary returns the envelope's bytes, not copied.
func (e *envelopeArg) MarshalBinary() ([]byte, error) { return *e, nil }

// String is the envelope's text, for a hook that prints commands
// (go-redis formats an argument it does not know with fmt).
func (e *envelopeArg) String() string { return string(*e) }
