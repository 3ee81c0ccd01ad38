package mulligan_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	mulligan "github.com/mulligan-dev/mulligan/bindings/go"
)

func TestIdempotencyStore(t *testing.T) {
	clk, _ := mulligan.NewFakeClock()
	s, err := mulligan.NewIdempotencyStore(clk, mulligan.IdempotencyTTL(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	key, err := mulligan.NewIdempotencyKey()
	if err != nil || len(key) != 36 {
		t.Fatalf("%q %v", key, err)
	}
	r, err := s.Reserve("alice", key, []byte("POST /pay 10"))
	if err != nil || r.State != mulligan.IdempotencyReserved {
		t.Fatalf("%+v %v", r, err)
	}
	again, _ := s.Reserve("alice", key, []byte("POST /pay 10"))
	if again.State != mulligan.IdempotencyInFlight || again.RetryAfter <= 0 {
		t.Fatalf("%+v", again)
	}
	if err := r.Complete(201, http.Header{"X-Id": {"42"}}, []byte("paid")); err != nil {
		t.Fatal(err)
	}
	if err := r.Complete(201, nil, nil); !errors.Is(err, mulligan.ErrInvalidArgument) {
		t.Fatal("a finished reservation must refuse")
	}
	rep, _ := s.Reserve("alice", key, []byte("POST /pay 10"))
	if rep.State != mulligan.IdempotencyReplay || rep.Status != 201 || string(rep.Body) != "paid" || rep.Header.Get("X-Id") != "42" {
		t.Fatalf("%+v", rep)
	}
	mis, _ := s.Reserve("alice", key, []byte("POST /pay 99"))
	if mis.State != mulligan.IdempotencyFingerprintMismatch {
		t.Fatalf("%+v", mis)
	}
	other, _ := s.Reserve("bob", key, []byte("POST /pay 10"))
	if other.State != mulligan.IdempotencyReserved {
		t.Fatalf("scopes must not share keys: %+v", other)
	}
	if err := other.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reserve("alice", "", nil); !errors.Is(err, mulligan.ErrInvalidArgument) {
		t.Fatal(err)
	}
	if _, err := mulligan.NewIdempotencyStore(nil, mulligan.IdempotencyTTL(-time.Second)); !errors.Is(err, mulligan.ErrInvalidArgument) {
		t.Fatal(err)
	}
	_ = s.Close()
	if _, err := s.Reserve("alice", key, nil); !errors.Is(err, mulligan.ErrInvalidArgument) {
		t.Fatal(err)
	}
	var ns *mulligan.IdempotencyStore
	_ = ns.Close()
}
