package controllers

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/source"
	"github.com/laxity-dev/laxity/internal/source/kafka"
	"github.com/laxity-dev/laxity/internal/sparkapp"
	"github.com/laxity-dev/laxity/test/builder"
)

// A user story: a query joins two Kafka topics, orders (two partitions, 10
// records a second) and lineitem (three partitions, 40 a second as
// declared, 200 from a minute in), both timestamped by the clock; one
// order in twenty is written 20 s after its timestamp, behind later ones.
// Every batch must cut both topics at one instant, so that an order only
// meets the lineitems of its own batch, and the orders written past the
// window's end must be counted late. Half-way through the window the
// operator restarts.
var _ = Describe("A query joining two Kafka topics", concurrent, Ordered, func() {
	type topic struct {
		name       string
		partitions int
		rate       int
		// surge, when set, is the rate from a minute into the window.
		surge int
	}
	var (
		w      *world
		topics = []topic{{"orders", 2, 10, 0}, {"lineitem", 3, 40, 200}}
		// stamps holds, per topic and partition, every record's timestamp
		// in offset order.
		stamps = map[string][][]time.Time{}
		// origins and reasons are the plans that came into force.
		origins []time.Time
		reasons []string
		factors []float64
	)
	const lead = 2 * time.Minute
	windowEnd := windowStart.Add(10 * time.Minute) // the builder's window
	surgeAt := windowStart.Add(time.Minute)
	rateAt := func(tp topic, at time.Time) int {
		if tp.surge > 0 && !at.Before(surgeAt) {
			return tp.surge
		}
		return tp.rate
	}
	BeforeAll(func(ctx SpecContext) {
		cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "orders"), kfake.SeedTopics(3, "lineitem"))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(cluster.Close)
		producer, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(producer.Close)
		written := map[string]int{}
		var held []*kgo.Record // late orders, written at the clock after their timestamp
		write := func(ctx context.Context, from, to time.Time) {
			var records []*kgo.Record
			for _, tp := range topics {
				if stamps[tp.name] == nil {
					stamps[tp.name] = make([][]time.Time, tp.partitions)
				}
				for at := from; at.Before(to); at = at.Add(time.Second / time.Duration(rateAt(tp, at))) {
					n := written[tp.name]
					written[tp.name]++
					r := &kgo.Record{Topic: tp.name, Partition: int32(n % tp.partitions), Timestamp: at, Value: []byte(tp.name)}
					if tp.name == "orders" && n%20 == 7 {
						held = append(held, r)
						continue
					}
					records = append(records, r)
				}
			}
			for len(held) > 0 && !held[0].Timestamp.Add(20*time.Second).After(to) {
				records, held = append(records, held[0]), held[1:]
			}
			for _, r := range records {
				stamps[r.Topic][r.Partition] = append(stamps[r.Topic][r.Partition], r.Timestamp)
			}
			Expect(producer.ProduceSync(ctx, records...).FirstErr()).To(Succeed())
		}

		w = newWorld(ctx, "join", lead)
		w.pollEvery(5 * time.Second)
		w.schedule = builder.Schedule(w.ns, "pool").Sizes(2, 4, 8).LeadTime(lead).SmallBatches().Obj()
		orders, lineitem := builder.JoinInput("orders", "10"), builder.JoinInput("lineitem", "40")
		orders.Kafka = &laxityv1alpha1.KafkaInput{Brokers: cluster.ListenAddrs(), Topic: "orders"}
		orders.LateFraction = "0.05"
		// Every late order is written by then: the count is complete.
		orders.AllowedLateness = metav1.Duration{Duration: 30 * time.Second}
		lineitem.Kafka = &laxityv1alpha1.KafkaInput{Brokers: cluster.ListenAddrs(), Topic: "lineitem"}
		lineitem.Location = "s3a://tpch/lineitem-dimensions/"
		q := builder.Query(w.ns, "q12").Inputs(orders, lineitem).Slack(2 * time.Minute).Obj()
		w.create(ctx, w.schedule, q)
		write(ctx, windowStart.Add(-time.Minute), windowStart)

		w.runProducing(ctx, q, windowStart.Add(5*time.Minute), write, func(ctx context.Context, _ time.Time) {
			if stored, err := loadPlan(ctx, k8sClient, w.schedule); err == nil && stored != nil && !slices.Contains(origins, stored.doc.Origin) {
				origins, reasons = append(origins, stored.doc.Origin), append(reasons, stored.reason)
				factors = append(factors, stored.doc.MaxSupportedRateFactor)
			}
		})
		w.report(ctx)
		fmt.Fprintf(GinkgoWriter, "plans: %v at %v, supporting %v times the rates they assumed\n", reasons, origins, factors)
	})

	// firstAt is the offset of partition p's first record of tp timestamped
	// at or after t, as Kafka's ListOffsets by timestamp answers.
	firstAt := func(tp string, p int32, t time.Time) int64 {
		for i, s := range stamps[tp][p] {
			if !s.Before(t) {
				return int64(i)
			}
		}
		return int64(len(stamps[tp][p]))
	}

	It("runs the join to completion before its deadline", func(ctx SpecContext) {
		w.finishedInTime(ctx, "q12")
	})

	It("measures the two topics' rates together, and re-plans when lineitem runs faster than declared", func() {
		Expect(reasons).To(ContainElement(ReplanRateExceeded), "plans: %v, supporting %v times the rates they assumed", reasons, factors)
		Expect(origins[slices.Index(reasons, ReplanRateExceeded)]).To(BeTemporally(">", surgeAt), "not before the surge; plans: %v", reasons)
	})

	It("cuts every batch on both topics at one instant, reading each record of the window once across the restart", func(ctx SpecContext) {
		apps := sparkapp.NewList()
		Expect(k8sClient.List(ctx, apps, client.InNamespace(w.ns), client.MatchingLabels{LabelStep: string(planner.StepBatch)})).To(Succeed())
		type batch struct {
			cut    time.Time
			ranges map[string]map[int32]kafka.Range
			tuples int64
		}
		batches := map[int]batch{}
		for i := range apps.Items {
			_, step, err := sparkapp.StepOf(&apps.Items[i])
			Expect(err).NotTo(HaveOccurred())
			cut, err := time.Parse(time.RFC3339Nano, step.Slice[source.SliceIntervalEnd])
			Expect(err).NotTo(HaveOccurred(), "%s records the instant it was cut at", apps.Items[i].GetName())
			b := batch{cut: cut, ranges: map[string]map[int32]kafka.Range{}, tuples: step.ToTuple - step.FromTuple}
			var held int64
			for _, tp := range topics {
				ranges, err := kafka.ParseOffsetsJSON(tp.name, step.Slice[tp.name+"."+kafka.SliceStartingOffsets], step.Slice[tp.name+"."+kafka.SliceEndingOffsets])
				Expect(err).NotTo(HaveOccurred(), "%s: %s", apps.Items[i].GetName(), tp.name)
				b.ranges[tp.name] = ranges
				held += kafka.Total(ranges)
			}
			Expect(held).To(Equal(b.tuples), "%s reads as many records as its tuple range", apps.Items[i].GetName())
			batches[step.Index] = b
		}
		Expect(len(batches)).To(BeNumerically(">", 2), "several batches, some after the restart")
		next := map[string]map[int32]int64{}
		for _, tp := range topics {
			next[tp.name] = map[int32]int64{}
			for p := range int32(tp.partitions) {
				next[tp.name][p] = firstAt(tp.name, p, windowStart)
			}
		}
		for i := range len(batches) {
			Expect(batches).To(HaveKey(i), "batch %d", i)
			b := batches[i]
			for _, tp := range topics {
				for p, r := range b.ranges[tp.name] {
					Expect(r.From).To(Equal(next[tp.name][p]), "batch %d starts on %s partition %d where batch %d ended", i, tp.name, p, i-1)
					if i < len(batches)-1 {
						Expect(r.To).To(Equal(firstAt(tp.name, p, b.cut)), "batch %d ends on %s partition %d at its cut %s", i, tp.name, p, b.cut)
					}
					next[tp.name][p] = r.To
				}
			}
		}
		for _, tp := range topics {
			for p := range int32(tp.partitions) {
				Expect(next[tp.name][p]).To(Equal(firstAt(tp.name, p, windowEnd)), "the batches end on %s partition %d where the window does", tp.name, p)
			}
		}
	})

	It("reads every record timestamped in the window in one batch, or counts it late in status and in a metric", func(ctx SpecContext) {
		var late int64
		for _, tp := range topics {
			for p := range int32(tp.partitions) {
				for _, at := range stamps[tp.name][p][firstAt(tp.name, p, windowEnd):] {
					if !at.Before(windowStart) && at.Before(windowEnd) {
						late++
					}
				}
			}
		}
		Expect(late).To(BeNumerically(">", 0), "orders written 20 s behind their time end up past the window's end")
		q := w.finishedInTime(ctx, "q12")
		Expect(q.Status.LateTuples).To(HaveValue(Equal(late)))
		Expect(metric("laxity_query_late_tuples", map[string]string{labelNamespace: w.ns, labelQuery: "q12"})).To(Equal(float64(late)))
	})

	It("passes each topic's offsets and location to the step under the input's name", func(ctx SpecContext) {
		app := &unstructured.Unstructured{}
		app.SetGroupVersionKind(sparkapp.GroupVersionKind)
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: "q12-b0"}, app)).To(Succeed())
		annotations := app.GetAnnotations()
		Expect(annotations).To(HaveKeyWithValue("laxity.dev/orders.kafka-topic", "orders"))
		Expect(annotations).To(HaveKeyWithValue("laxity.dev/lineitem.input", "s3a://tpch/lineitem-dimensions/"))
		Expect(annotations).To(HaveKeyWithValue("laxity.dev/orders.from-tuple", "0"))
		args, _, err := unstructured.NestedStringSlice(app.Object, "spec", "arguments")
		Expect(err).NotTo(HaveOccurred())
		Expect(args).To(ContainElement("--laxity-lineitem.kafka-starting-offsets=" + annotations["laxity.dev/lineitem.kafka-starting-offsets"]))
		Expect(args).To(ContainElement("--laxity-interval-end=" + annotations["laxity.dev/interval-end"]))
		conf, _, err := unstructured.NestedStringMap(app.Object, "spec", "sparkConf")
		Expect(err).NotTo(HaveOccurred())
		Expect(conf).To(HaveKeyWithValue("spark.laxity.orders.kafka-ending-offsets", annotations["laxity.dev/orders.kafka-ending-offsets"]))
		Expect(slices.ContainsFunc(args, func(a string) bool { return a == "--laxity-input=" })).To(BeFalse(), "a join has no one input location")
	})
})

// A user story: a query joins two synthetic streams, orders at 10 tuples a
// second and lineitem at 40, beside a query over one. The source tells when
// a batch's tuples will be there, so the schedule wakes for it instead of
// polling; every batch holds each stream's tuples up to its cut.
var _ = Describe("A query joining two synthetic streams", concurrent, Ordered, func() {
	var w *world
	const lead = 2 * time.Minute
	BeforeAll(func(ctx SpecContext) {
		w = newWorld(ctx, "join-synthetic", lead)
		w.schedule = builder.Schedule(w.ns, "pool").Sizes(2, 4, 8).LeadTime(lead).SmallBatches().Obj()
		join := builder.Query(w.ns, "q4").Inputs(builder.JoinInput("orders", "10"), builder.JoinInput("lineitem", "40")).Slack(2 * time.Minute).Obj()
		w.create(ctx, w.schedule, join, builder.Query(w.ns, "plain").Rate("30").Slack(3*time.Minute).Obj())
		w.run(ctx, 30*time.Minute)
		w.report(ctx)
	})

	It("runs both to completion before their deadlines", func(ctx SpecContext) {
		q := w.finishedInTime(ctx, "q4")
		Expect(q.Status.LateTuples).To(BeNil(), "streams that arrive by the clock have no late tuples to count")
		w.finishedInTime(ctx, "plain")
	})

	It("cuts every batch of the join on both streams at one instant, reading each tuple once", func(ctx SpecContext) {
		apps := sparkapp.NewList()
		Expect(k8sClient.List(ctx, apps, client.InNamespace(w.ns), client.MatchingLabels{LabelStep: string(planner.StepBatch), LabelQuery: "q4"})).To(Succeed())
		cuts := map[int]map[string]string{}
		for i := range apps.Items {
			_, step, err := sparkapp.StepOf(&apps.Items[i])
			Expect(err).NotTo(HaveOccurred())
			cuts[step.Index] = step.Slice
		}
		Expect(len(cuts)).To(BeNumerically(">", 1))
		rates := map[string]float64{"orders": 10, "lineitem": 40}
		next := map[string]int64{}
		for i := range len(cuts) {
			Expect(cuts).To(HaveKey(i))
			cut, err := time.Parse(time.RFC3339Nano, cuts[i][source.SliceIntervalEnd])
			Expect(err).NotTo(HaveOccurred())
			for name, rate := range rates {
				from, to := cuts[i][name+".from-tuple"], cuts[i][name+".to-tuple"]
				Expect(from).To(Equal(strconv.FormatInt(next[name], 10)), "batch %d starts %s where batch %d ended", i, name, i-1)
				held := int64(rate * cut.Sub(windowStart).Seconds())
				Expect(to).To(Equal(strconv.FormatInt(held, 10)), "batch %d holds %s's tuples up to its cut %s", i, name, cut)
				next[name] = held
			}
		}
		Expect(next).To(Equal(map[string]int64{"orders": 6000, "lineitem": 24000}), "the batches end where the ten-minute window does")
	})
})
