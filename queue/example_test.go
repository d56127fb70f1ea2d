package queue_test

import (
	"context"
	"fmt"
	"log"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/queue"
)

// A producer enqueues a message; a caller-chosen id makes the enqueue
// idempotent.
func ExampleProducer_Enqueue() {
	rdb, err := queue.NewClient(queue.ClientOptions{Addrs: []string{"127.0.0.1:6379"}})
	if err != nil {
		log.Fatal(err)
	}
	defer rdb.Close()
	store, err := queue.New(queue.Config{Client: rdb})
	if err != nil {
		log.Fatal(err)
	}
	res, err := store.Producer().Enqueue(context.Background(), &drover.Message{
		Queue: "emails", Task: "send-welcome", ID: "welcome-42", Args: []byte(`{"user":42}`),
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.ID, res.Duplicate)
}

// The queue's owner reads a batch after its offset and decodes each entry;
// poison entries are dead-lettered, never stop the queue.
func ExampleLog_ReadAfter() {
	ctx := context.Background()
	rdb, err := queue.NewClient(queue.ClientOptions{Addrs: []string{"127.0.0.1:6379"}})
	if err != nil {
		log.Fatal(err)
	}
	defer rdb.Close()
	store, err := queue.New(queue.Config{Client: rdb})
	if err != nil {
		log.Fatal(err)
	}
	var offset drover.Position // from the committed offset
	entries, err := store.Log().ReadAfter(ctx, "emails", offset, 100)
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range entries {
		m, err := e.Decode()
		if err != nil {
			_ = store.Dead().Kill(ctx, "emails", e.ID, e.Raw, drover.Failure{Reason: err.Error(), ExitCode: -1})
			continue
		}
		fmt.Println(m.Task, m.Position)
	}
}
