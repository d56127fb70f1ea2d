package drover

import "context"

// CommitRequest is one claim's offset in a batched commit.
type CommitRequest struct {
	Claim  Claim
	Offset Offset
}

// ClaimCommitter commits the offsets of many claims in one call: the
// coordinator sends them as few fenced writes as its request bound allows,
// each claim's write still checking that claim's fencing. It returns one
// error per request, in order, meaning what Claim.Commit's error would.
type ClaimCommitter interface {
	CommitMany(ctx context.Context, reqs []CommitRequest) []error
}

// BatchClaim is a Claim that can commit together with others: claims whose
// Committer is the same (==) commit in one CommitMany call. A wrapper whose
// wrapped claim cannot returns nil, and commits alone.
type BatchClaim interface {
	Claim
	Committer() ClaimCommitter
}
