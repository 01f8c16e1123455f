package admin

import (
	"context"
	"testing"
)

// BenchmarkCall is one admin round trip (echo) over the real socket on
// an open connection.
func BenchmarkCall(b *testing.B) {
	names := testNames(b)
	s := NewServer(&Options{Name: names.Admin(), Methods: testMethods(), RuntimeUID: 10099})
	if err := s.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	c, err := Dial(context.Background(), names.Admin())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	params := map[string]string{"text": "x"}
	for b.Loop() {
		if err := c.Call(context.Background(), "echo", params, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCtlStatus is a whole `agentosd ctl status` minus the process
// start: dial, one call, print.
func BenchmarkCtlStatus(b *testing.B) {
	names := testNames(b)
	s := NewServer(&Options{Name: names.Admin(), RuntimeUID: 10099})
	if err := s.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for b.Loop() {
		if code := Ctl(context.Background(), Verbs(), []string{"--socket-prefix", names.Prefix, "status"}, CtlIO{}); code != ExitOK {
			b.Fatalf("exit %d", code)
		}
	}
}
