// Package controllers holds laxity's three reconcilers. The ElasticSchedule
// controller plans a schedule, drives its node pool and launches its
// queries' steps one at a time; the IntermittentQuery controller reports a
// query's progress. Both observe the cluster, call the pure parts (the pass
// decisions of internal/pass, the planner, dispatch, replan) through the
// translation of internal/spec, and act.
//
// One pass over a schedule, in the order it runs:
//
//	elasticschedule_controller.go  Reconcile and the pass: observe, judge, re-plan, size, dispatch
//	tenancy.go                     what the namespace may make laxity do (internal/tenancy), first
//	pass.go                        the view a pass reads once: queries, inputs, steps, nodes, plan
//	planning.go                    whether the plan in force holds (internal/pass), and re-planning
//	dispatching.go                 the next step: decided by internal/pass, rendered and launched
//	schedule_status.go             the schedule's status and conditions
//
// What the pass reads and writes:
//
//	observe.go       launched steps read back, latest attempt of each
//	steps.go         launching, syncing and cancelling steps through the
//	                 schedule's step runner (internal/steprun)
//	plan.go          the plan in force, kept in the <schedule>-plan ConfigMap
//	sources.go       queries' inputs, read once per pass for both controllers
//	undecodable.go   stored objects that no longer decode
//
// The IntermittentQuery controller is intermittentquery_controller.go, its
// status and conditions query_status.go. The RecurringQuery controller,
// which stamps out one IntermittentQuery per window of a cron schedule
// (deciding with internal/recurrence), is recurringquery_controller.go. options.go holds the manager's
// settings, setup.go the wiring into a manager and the StepRunners factory
// that picks a schedule's step runner, metrics.go the metrics.
package controllers
