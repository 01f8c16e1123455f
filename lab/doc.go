// Package lab is the lab's one run pipeline: the devices a lab.yaml names
// (adb servers' devices, virtual devices started or adopted) → a probe of
// each → a build for their ABIs (or prebuilt artifacts) → provisioning of
// every device → health-gated leases → a dynamic queue of the selected
// scenarios → every report, with the leak scan. Run is `agentlab run`;
// OpenInventory, Build and Provision are the steps `agentlab devices`,
// `build` and `provision` run alone. The command line (lab/cli) only
// parses flags, prints and maps errors to exit codes (ExitCode).
//
// A run keeps one state value per device (Device), from the inventory to
// the report, and maps the configuration to provisioning in one place
// (the stub or live model included), whichever command provisions.
//
// Run never handles signals: Options.Stop drains the queue, cancelling
// the context aborts it; the command line turns Ctrl-C into those.
package lab
