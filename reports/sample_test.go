package reports

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"
)

// The fixed sample run the golden files are rendered from. It has every
// verdict, a flaky scenario with two attempts, a scenario lost to a lab
// fault on one device and re-queued to pass on another, a scenario whose
// every attempt was lost to the lab, an inconclusive scenario (a person
// touched the phone) and a device quarantined after a failed recovery.

var t0 = time.Date(2026, 3, 2, 1, 0, 0, 0, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

func art(path string, kind ArtifactKind, size int64) Artifact {
	sum := sha256.Sum256([]byte(path))
	return Artifact{Path: path, Kind: kind, Size: size, SHA256: hex.EncodeToString(sum[:])}
}

func up(script, cas, check string) string { return script + "/" + cas + "/" + check }

func checksOK(script, cas string, names ...string) []Check {
	out := make([]Check, len(names))
	for i, n := range names {
		out[i] = Check{Name: n, OK: true, Upstream: up(script, cas, n)}
	}
	return out
}

func scenarioEvent(name string, attempt int, v Verdict, from, to int) Event {
	return Event{Kind: EventScenario, Label: name, Start: at(from), End: at(to), Scenario: name, Attempt: attempt, Verdict: v}
}

func sampleRun() *Run {
	const (
		vd    = "vd-1"
		emu   = "emulator-5554"
		phone = "R58M12345"
	)
	tp := "third_party.py"

	// third-party/revoke-closes: a product failure on the emulator.
	revokeArt := []Artifact{
		art("artifacts/third-party__revoke-closes/attempt-1/caller-list.json", ArtifactDump, 2048),
		art("artifacts/third-party__revoke-closes/attempt-1/logcat.txt", ArtifactLogcat, 181234),
		art("artifacts/third-party__revoke-closes/attempt-1/events.jsonl", ArtifactEvents, 9120),
	}
	revokeChecks := checksOK(tp, "revoke-closes", "channelWasOpen", "taskWasRunning", "revokeAccepted")
	revokeChecks = append(revokeChecks,
		Check{Name: "serverClosedChannelAtOnce", OK: true, Detail: "closed 0.4 s after revoke", Upstream: up(tp, "revoke-closes", "serverClosedChannelAtOnce")},
		Check{Name: "tasksCancelled", OK: false, Detail: "usage.activeTasks still 1 after 15 s",
			Evidence: "artifact:artifacts/third-party__revoke-closes/attempt-1/caller-list.json", Upstream: up(tp, "revoke-closes", "tasksCancelled")},
		Check{Name: "cancelRecorded", OK: false, Detail: "revocations[0].cancelRequested is empty",
			Evidence: `<b>"cancelRequested": []</b> | not_a_table`, Upstream: up(tp, "revoke-closes", "cancelRecorded")},
		Check{Name: "slotFreed", OK: true, Upstream: up(tp, "revoke-closes", "slotFreed")},
	)
	revoke := Scenario{
		Name: "third-party/revoke-closes", File: "third_party/revoke_closes.yaml", Tags: []string{"nightly", "third-party"},
		Devices: []string{emu}, Verdict: VerdictFail, Reason: "revoking the caller left its task running",
		DurationMs: 48000,
		Attempts: []Attempt{{Number: 1, Device: emu, Verdict: VerdictFail, StartedAt: at(12), FinishedAt: at(60),
			Checks: revokeChecks, Artifacts: revokeArt}},
		Checks: revokeChecks, Artifacts: revokeArt,
	}

	// third-party/unauthorized-pending: a plain pass.
	pendingChecks := checksOK(tp, "unauthorized-pending", "openReturnsPending")
	pendingChecks = append(pendingChecks, Check{Name: "openDoesNotBlock", OK: true, Detail: "open returned in 112 ms", Upstream: up(tp, "unauthorized-pending", "openDoesNotBlock")})
	pendingChecks = append(pendingChecks, checksOK(tp, "unauthorized-pending", "recorded", "hasRequestId", "packageFromUid", "digest64", "labelIsAppName", "sameRequestOnRetry", "noChannelOpened")...)
	// An Android UI check on a virtual device: skipped, never a pass.
	pendingChecks = append(pendingChecks, Check{Name: "cardNotificationShown", Skipped: true, Detail: "skipped: not applicable on virtual devices",
		Upstream: up(tp, "unauthorized-pending", "cardNotificationShown")})
	pending := Scenario{
		Name: "third-party/unauthorized-pending", File: "third_party/unauthorized_pending.yaml", Tags: []string{"nightly", "third-party"},
		Devices: []string{vd}, Verdict: VerdictPass, DurationMs: 24000,
		Attempts: []Attempt{{Number: 1, Device: vd, Verdict: VerdictPass, StartedAt: at(71), FinishedAt: at(95), Checks: pendingChecks}},
		Checks:   pendingChecks,
	}

	// ext/plugin-death: failed once, passed on the retry: flaky.
	mp := "mcp-plugin/run.py"
	deathFail := []Check{
		{Name: "died", OK: true, Detail: "outcome tool_result_unknown after 1.2 s", Upstream: up(mp, "plugin-death", "died")},
		{Name: "reconnected", OK: false, Detail: "no new pid within 3 s", Evidence: "artifact:artifacts/ext__plugin-death/attempt-1/ext.log", Upstream: up(mp, "plugin-death", "reconnected")},
	}
	deathPass := []Check{
		{Name: "died", OK: true, Detail: "outcome tool_result_unknown after 1.1 s", Upstream: up(mp, "plugin-death", "died")},
		{Name: "reconnected", OK: true, Detail: "new pid 4242", Upstream: up(mp, "plugin-death", "reconnected")},
	}
	deathArt1 := []Artifact{art("artifacts/ext__plugin-death/attempt-1/ext.log", ArtifactLog, 4096)}
	deathArt2 := []Artifact{art("artifacts/ext__plugin-death/attempt-2/ext.log", ArtifactLog, 3900)}
	death := Scenario{
		Name: "ext/plugin-death", File: "ext/plugin_death.yaml", Tags: []string{"ext", "nightly"},
		Devices: []string{vd}, Verdict: VerdictFlaky, DurationMs: 59000,
		Attempts: []Attempt{
			{Number: 1, Device: vd, Verdict: VerdictFail, StartedAt: at(10), FinishedAt: at(40), Checks: deathFail, Artifacts: deathArt1},
			{Number: 2, Device: vd, Verdict: VerdictPass, StartedAt: at(41), FinishedAt: at(70), Checks: deathPass, Artifacts: deathArt2},
		},
		Checks: deathPass, Artifacts: append(append([]Artifact{}, deathArt1...), deathArt2...),
	}

	// sms/injection: lost to the phone going offline, re-queued, passed on
	// the emulator.
	sms := "third_party_sms_e2e.py"
	injChecks := checksOK(sms, "injection", "seededEventsPresent", "eventsRemain", "alarmsAndTodosRemain",
		"noCardOutsideCreationTools", "outboxEmpty", "runEndedDone", "atMostOneNewEvent")
	injection := Scenario{
		Name: "sms/injection", File: "sms/injection.yaml", Tags: []string{"injection", "nightly", "sms"},
		Devices: []string{emu}, Verdict: VerdictPass, DurationMs: 73000,
		Attempts: []Attempt{
			{Number: 1, Device: phone, Verdict: VerdictError, LabFault: true, Error: "device went offline (adb: device 'R58M12345' not found)",
				StartedAt: at(112), FinishedAt: at(125), Artifacts: []Artifact{art("artifacts/sms__injection/attempt-1/adb.log", ArtifactLog, 733)}},
			{Number: 2, Device: emu, Verdict: VerdictPass, StartedAt: at(130), FinishedAt: at(190), Checks: injChecks},
		},
		Checks:    injChecks,
		Artifacts: []Artifact{art("artifacts/sms__injection/attempt-1/adb.log", ArtifactLog, 733)},
	}

	// notes/always-allow: every attempt lost to the lab: error.
	allow := Scenario{
		Name: "notes/always-allow", File: "notes/always_allow.yaml", Tags: []string{"consent", "nightly", "notes"},
		Devices: []string{vd}, Verdict: VerdictError, Reason: "retry budget (2) exhausted by lab faults",
		DurationMs: 52000,
		Attempts: []Attempt{
			{Number: 1, Device: emu, Verdict: VerdictError, LabFault: true, Error: "adb: transport reset while installing org.agentos.samples.notes",
				StartedAt: at(200), FinishedAt: at(222)},
			{Number: 2, Device: vd, Verdict: VerdictError, LabFault: true, Error: "runtime did not answer on @agentos-admin within 30 s after provisioning",
				StartedAt: at(230), FinishedAt: at(260), Artifacts: []Artifact{art("artifacts/notes__always-allow/attempt-2/props.txt", ArtifactProps, 5120)}},
		},
		Artifacts: []Artifact{art("artifacts/notes__always-allow/attempt-2/props.txt", ArtifactProps, 5120)},
	}

	// notes/live-create: failed while a person touched the phone:
	// inconclusive.
	nt := "third_party_notes_e2e.py"
	liveChecks := []Check{
		{Name: "done", OK: true, Upstream: up(nt, "create", "done")},
		{Name: "eventAt1500", OK: false, Detail: "no event at T15:00 (found one at 14:00)", Evidence: "artifact:artifacts/notes__live-create/attempt-1/consent-audit.json", Upstream: up(nt, "create", "eventAt1500")},
		{Name: "weeklyRun", OK: true, Detail: "Monday 07:00 alarm", Upstream: up(nt, "create", "weeklyRun")},
		{Name: "noDuplicates", OK: true, Upstream: up(nt, "create", "noDuplicates")},
		{Name: "reportMatchesApps", OK: false, Detail: "report says 2 created, the apps hold 1", Upstream: up(nt, "create", "reportMatchesApps")},
	}
	liveArt := []Artifact{
		art("artifacts/notes__live-create/attempt-1/consent-audit.json", ArtifactConsentAudit, 1533),
		art("artifacts/notes__live-create/attempt-1/screen.png", ArtifactScreenshot, 80211),
	}
	live := Scenario{
		Name: "notes/live-create", File: "notes/live_create.yaml", Tags: []string{"live", "notes"},
		Devices: []string{phone}, Verdict: VerdictInconclusive, Reason: "a person touched the device during the scenario",
		DurationMs: 95000, PersonTouches: 2,
		Attempts: []Attempt{{Number: 1, Device: phone, Verdict: VerdictInconclusive, StartedAt: at(15), FinishedAt: at(110),
			Checks: liveChecks, Artifacts: liveArt}},
		Checks: liveChecks, Artifacts: liveArt,
	}

	// sms/send-peer: never ran.
	peer := Scenario{
		Name: "sms/send-peer", File: "sms/send_peer.yaml", Tags: []string{"nightly", "sms"},
		Verdict: VerdictSkipped, Reason: "needs 2 emulators with telephony; the pool has 1",
	}

	devices := []Device{
		{
			Serial: vd, Name: "virtual-1", Kind: DeviceVirtual, Model: "agentos-virtual", APILevel: 35, ABI: "x86_64",
			RootMethod: "virtual", RuntimeVersion: "0.4.0",
			Health: []HealthRecord{{At: at(0), State: "healthy"}},
			Timeline: []Event{
				{Kind: EventLease, Label: "lease", Start: at(0), End: at(270)},
				{Kind: EventProvision, Label: "provision", Start: at(1), End: at(9), Detail: "module, 6 apps, model stub"},
				scenarioEvent("ext/plugin-death", 1, VerdictFail, 10, 40),
				scenarioEvent("ext/plugin-death", 2, VerdictPass, 41, 70),
				scenarioEvent("third-party/unauthorized-pending", 1, VerdictPass, 71, 95),
				scenarioEvent("notes/always-allow", 2, VerdictError, 230, 260),
			},
		},
		{
			Serial: phone, Name: "pixel-7", Kind: DevicePhone, Model: "Pixel 7", APILevel: 36, ABI: "arm64-v8a",
			RootMethod: "magisk", RuntimeVersion: "0.4.0",
			Health: []HealthRecord{
				{At: at(0), State: "healthy", Detail: "battery 88%"},
				{At: at(125), State: "offline", Detail: "adb: device not found"},
				{At: at(126), State: "recovering"},
				{At: at(170), State: "quarantined", Detail: "boot did not complete within 40 s"},
			},
			QuarantineReason: "offline at 01:02:05; reconnect and reboot did not bring it back",
			Timeline: []Event{
				{Kind: EventLease, Label: "lease", Start: at(0), End: at(170)},
				{Kind: EventProvision, Label: "provision", Start: at(2), End: at(14)},
				scenarioEvent("notes/live-create", 1, VerdictInconclusive, 15, 110),
				scenarioEvent("sms/injection", 1, VerdictError, 112, 125),
				{Kind: EventRecovery, Label: "reconnect, reboot, wait for boot", Start: at(126), End: at(168), Verdict: VerdictError, Detail: "boot did not complete within 40 s"},
				{Kind: EventQuarantine, Label: "quarantined", Start: at(170)},
			},
		},
		{
			Serial: emu, Name: "pixel-6-api34", Kind: DeviceEmulator, Model: "sdk_gphone64_x86_64", APILevel: 34, ABI: "x86_64",
			RootMethod: "adb-root", RuntimeVersion: "0.4.0",
			Health: []HealthRecord{{At: at(0), State: "healthy"}, {At: at(222), State: "healthy", Detail: "recovered after transport reset"}},
			Timeline: []Event{
				{Kind: EventLease, Label: "lease", Start: at(0), End: at(270)},
				{Kind: EventProvision, Label: "provision", Start: at(1), End: at(11)},
				scenarioEvent("third-party/revoke-closes", 1, VerdictFail, 12, 60),
				scenarioEvent("sms/injection", 2, VerdictPass, 130, 190),
				scenarioEvent("notes/always-allow", 1, VerdictError, 200, 222),
			},
		},
	}

	return &Run{
		SchemaVersion: SchemaVersion,
		RunID:         "run_01JNQ8ZC4Y3M6S2T7W9XAB1CDE",
		StartedAt:     at(0),
		FinishedAt:    at(272),
		LabVersion:    "0.4.0-dev+3f2c1ab",
		ConfigDigest:  "sha256:" + fmt.Sprintf("%x", sha256.Sum256([]byte("lab.yaml"))),
		Host:          "lab-host-1",
		Selection:     Selection{Tags: []string{"nightly", "live"}, ShardIndex: 0, ShardCount: 1},
		Model:         Model{Kind: ModelStub, Name: "scripted"},
		Devices:       devices,
		// Deliberately not in name order: writers must sort.
		Scenarios: []Scenario{revoke, pending, death, injection, allow, live, peer},
	}
}
