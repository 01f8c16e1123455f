package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/runtime/apps"
	"github.com/agentoslab/agentlab/runtime/catalog"
	"github.com/agentoslab/agentlab/runtime/consent"
	sdk "github.com/agentoslab/agentlab/runtime/sdk/aci"
)

// BenchmarkCallOverhead is one ACI call through the runtime's side:
// catalog lookup by the model's name, the consent decision (a remembered
// allow), the five layers, the socket round trip to an in-process callee
// and the rendering of its result. Target: p50 < 500 µs, p99 < 2 ms.
func BenchmarkCallOverhead(b *testing.B) {
	srv := sdk.NewServer(server, runtimeOpts())
	srv.MustAdd(echo())
	r := newRig(b, srv, Options{}, apps.PermissionACI)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sv, err := srv.Start(ctx, r.names.ACI(calleePkg, server))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { cancel(); sv.Wait() }()
	r.ctl.Discover(ctx, "")
	cat, err := catalog.New(r.ctl.Entries())
	if err != nil {
		b.Fatal(err)
	}
	const name = "aci__org_agentos_test_callee__svc__echo"
	view := catalog.View{Mode: catalog.ModeDefault}
	args := json.RawMessage(`{"text":"hi"}`)
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		e, err := cat.Lookup(name, view)
		if err != nil {
			b.Fatal(err)
		}
		if consent.Requirement(e.Risk, consent.HookNone, e.Approval, true) != consent.RunRemembered {
			b.Fatal("not remembered")
		}
		res := r.ctl.CallACI(ctx, e.ACI, args, r.callerOK, false, nil)
		if res.IsError {
			b.Fatal(res.Text)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkDiscover50 discovers 50 capabilities across 5 apps and names
// them into a catalog. Target: < 20 ms.
func BenchmarkDiscover50(b *testing.B) {
	nm := names(b)
	tab := &table{pkgs: map[string]apps.Package{}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for a := range 5 {
		pkg := fmt.Sprintf("org.agentos.bench.app%d", a)
		srv := sdk.NewServer(server, runtimeOpts())
		for c := range 10 {
			srv.MustAdd(sdk.NewCapability(fmt.Sprintf("cap_%d", c), "A capability to discover.").
				Param("text", sdk.TypeString, sdk.Required, "Some text.").Param("n", sdk.TypeInt, false, "A number.").
				Result("out", sdk.TypeString, "The answer.").
				Handle(func(context.Context, *sdk.Call) (sdk.Bundle, error) { return nil, nil }))
		}
		sv, err := srv.Start(ctx, nm.ACI(pkg, server))
		if err != nil {
			b.Fatal(err)
		}
		defer sv.Wait()
		tab.pkgs[pkg] = apps.Package{Name: pkg, UID: os.Getuid(), Services: []apps.Service{{Name: "S", Kind: apps.ServiceKindACI, Server: server}}}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ctl := New(Options{Packages: tab, Names: nm})
		ctl.Discover(ctx, "")
		cat, err := catalog.New(ctl.Entries())
		if err != nil || cat.Len() != 50 {
			b.Fatalf("catalog of %d: %v", cat.Len(), err)
		}
	}
	b.StopTimer()
	cancel()
}
