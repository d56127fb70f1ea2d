// Package drover holds the vocabulary shared by every part of Drover: messages
// and their envelope, positions and offsets, members and assignments, queue
// configuration, sentinel errors and the clock. It imports only the standard
// library; the adapters (queue for Redis, coordinator for ZooKeeper) translate
// their drivers' types and errors into these.
//
// See DESIGN.md and docs/ for the contracts between the parts.
package drover
