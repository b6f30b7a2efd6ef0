package controllers

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/source/kafka"
	"github.com/laxity-dev/laxity/internal/sparkapp"
	"github.com/laxity-dev/laxity/test/builder"
)

// A user story: a query reads a three-partition Kafka topic (an in-process
// cluster). Records arrive at 50 a second, round robin over the
// partitions, timestamped by the clock; some were written before the window
// opened, and writing goes on after it closes. Half-way through the window
// the operator restarts, with nothing but what the cluster and the topic
// hold.
var _ = Describe("A query reading a Kafka topic", concurrent, Ordered, func() {
	const (
		topic      = "orders"
		partitions = 3
		rate       = 50 // records a second
		lead       = 2 * time.Minute
	)
	var (
		w *world
		// before and inside count, per partition, the records written
		// before the window and in it.
		before, inside [partitions]int64
	)
	BeforeAll(func(ctx SpecContext) {
		cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, topic))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(cluster.Close)
		producer, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(producer.Close)
		written := 0
		write := func(ctx context.Context, from, to time.Time) {
			var records []*kgo.Record
			for at := from; at.Before(to); at = at.Add(time.Second / rate) {
				p := int32(written % partitions)
				records = append(records, &kgo.Record{Partition: p, Timestamp: at, Value: []byte("order")})
				written++
				switch {
				case at.Before(windowStart):
					before[p]++
				case at.Before(windowStart.Add(10 * time.Minute)):
					inside[p]++
				}
			}
			Expect(producer.ProduceSync(ctx, records...).FirstErr()).To(Succeed())
		}

		w = newWorld(ctx, "kafka", lead)
		// A topic tells no arrival ahead: the schedule polls it.
		w.pollEvery(10 * time.Second)
		w.schedule = builder.Schedule(w.ns, "pool").Sizes(2, 4, 8).LeadTime(lead).SmallBatches().Obj()
		q := builder.Query(w.ns, "orders").Rate("50").Slack(90 * time.Second).Obj()
		q.Spec.Input.Kafka = &laxityv1alpha1.KafkaInput{Brokers: cluster.ListenAddrs(), Topic: topic}
		w.create(ctx, w.schedule, q)
		write(ctx, windowStart.Add(-time.Minute), windowStart)

		w.runProducing(ctx, q, windowStart.Add(5*time.Minute), write, nil)
		w.report(ctx)
	})

	It("runs the query to completion before its deadline", func(ctx SpecContext) {
		q := w.finishedInTime(ctx, "orders")
		Expect(*q.Status.ArrivedTuples).To(Equal(inside[0]+inside[1]+inside[2]), "arrivals count the window's records only")
		Expect(q.Status.LateTuples).To(HaveValue(BeZero()), "records written in time order are never late")
	})

	It("reads every record of the window exactly once, across the restart", func(ctx SpecContext) {
		apps := sparkapp.NewList()
		Expect(k8sClient.List(ctx, apps, client.InNamespace(w.ns), client.MatchingLabels{LabelStep: string(planner.StepBatch)})).To(Succeed())
		batches := map[int]map[int32]kafka.Range{}
		for i := range apps.Items {
			_, step, err := sparkapp.StepOf(&apps.Items[i])
			Expect(err).NotTo(HaveOccurred())
			ranges, err := kafka.ParseOffsetsJSON(topic, step.Slice[kafka.SliceStartingOffsets], step.Slice[kafka.SliceEndingOffsets])
			Expect(err).NotTo(HaveOccurred(), apps.Items[i].GetName())
			Expect(kafka.Total(ranges)).To(Equal(step.ToTuple-step.FromTuple), "%s reads as many records as its tuple range", apps.Items[i].GetName())
			batches[step.Index] = ranges
		}
		Expect(len(batches)).To(BeNumerically(">", 2), "several batches, some after the restart")
		next := map[int32]int64{}
		for p := range int32(partitions) {
			next[p] = before[p]
		}
		for i := range len(batches) {
			Expect(batches).To(HaveKey(i), "batch %d", i)
			for p, r := range batches[i] {
				Expect(r.From).To(Equal(next[p]), "batch %d starts on partition %d where batch %d ended", i, p, i-1)
				next[p] = r.To
			}
		}
		for p := range int32(partitions) {
			Expect(next[p]).To(Equal(before[p]+inside[p]), "the batches end on partition %d where the window does", p)
		}
	})

	It("records each batch's offsets on its SparkApplication as Spark's Kafka source takes them", func(ctx SpecContext) {
		app := &unstructured.Unstructured{}
		app.SetGroupVersionKind(sparkapp.GroupVersionKind)
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: "orders-b0"}, app)).To(Succeed())
		annotations := app.GetAnnotations()
		Expect(annotations).To(HaveKeyWithValue("laxity.dev/kafka-topic", topic))
		Expect(annotations["laxity.dev/kafka-starting-offsets"]).To(MatchJSON(fmt.Sprintf(`{"orders":{"0":%d,"1":%d,"2":%d}}`, before[0], before[1], before[2])),
			"the first batch starts at the window's first records")
		args, _, err := unstructured.NestedStringSlice(app.Object, "spec", "arguments")
		Expect(err).NotTo(HaveOccurred())
		Expect(args).To(ContainElement("--laxity-kafka-starting-offsets=" + annotations["laxity.dev/kafka-starting-offsets"]))
		Expect(args).To(ContainElement("--laxity-kafka-ending-offsets=" + annotations["laxity.dev/kafka-ending-offsets"]))
	})
})

// A user story: one query's Kafka credentials are missing when the window
// opens. That query shows why on its conditions and starts nothing; the
// other query of the schedule goes on. Once the Secret is created the query
// reads the topic and catches up.
var _ = Describe("A Kafka query whose Secret is missing", concurrent, Ordered, func() {
	const topic = "payments"
	var w *world
	var during laxityv1alpha1.IntermittentQuery
	BeforeAll(func(ctx SpecContext) {
		cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topic))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(cluster.Close)
		producer, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.DefaultProduceTopic(topic))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(producer.Close)

		w = newWorld(ctx, "kafka-secret", 2*time.Minute)
		w.pollEvery(10 * time.Second)
		w.es.Sources = &Sources{Reader: k8sClient}
		w.iq.Sources = w.es.Sources
		w.schedule = builder.Schedule(w.ns, "pool").Sizes(2, 4, 8).LeadTime(2 * time.Minute).SmallBatches().Obj()
		payments := builder.Query(w.ns, "payments").Rate("20").Slack(3 * time.Minute).Obj()
		payments.Spec.Input.Kafka = &laxityv1alpha1.KafkaInput{Brokers: cluster.ListenAddrs(), Topic: topic, SecretRef: &laxityv1alpha1.SecretReference{Name: "payments-kafka"}}
		w.create(ctx, w.schedule, payments, builder.Query(w.ns, "steady").Rate("30").Slack(3*time.Minute).Obj())

		secretAt := windowStart.Add(3 * time.Minute)
		w.at(secretAt)
		last := windowStart
		w.runFeeding(ctx, 30*time.Minute, func(ctx context.Context, t time.Time) {
			if t.After(last) {
				var records []*kgo.Record
				for at := last; at.Before(t); at = at.Add(time.Second / 20) {
					records = append(records, &kgo.Record{Timestamp: at, Value: []byte("payment")})
				}
				Expect(producer.ProduceSync(ctx, records...).FirstErr()).To(Succeed())
				last = t
			}
			if t.Equal(secretAt) {
				Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(payments), &during)).To(Succeed())
				w.create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "payments-kafka", Namespace: w.ns}})
			}
		})
		w.report(ctx)
	})

	It("showed why on the query and started nothing of it while the Secret was missing", func() {
		ready := meta.FindStatusCondition(during.Status.Conditions, laxityv1alpha1.IntermittentQueryReadyCondition)
		Expect(ready).NotTo(BeNil())
		Expect(ready.Reason).To(Equal(laxityv1alpha1.InputUnavailableReason))
		Expect(ready.Message).To(ContainSubstring("spec.input.kafka.secretRef: Secret payments-kafka"))
		Expect(during.Status.Batches).To(BeEmpty())
	})

	It("ran the other query meanwhile, and both to completion once the Secret was there", func(ctx SpecContext) {
		var launchedBefore bool
		for _, l := range w.launches {
			launchedBefore = launchedBefore || (l.query == "steady" && l.at.Before(windowStart.Add(3*time.Minute)))
		}
		Expect(launchedBefore).To(BeTrue(), "steady launched a batch while payments was held")
		for _, name := range []string{"payments", "steady"} {
			w.finishedInTime(ctx, name)
		}
	})
})

// runProducing runs the world for 30 minutes from the window's start,
// writing the records of each step's span with write and calling each, if
// set, at every step; at restart the operator restarts with nothing but
// what the brokers hold: q's sources are forgotten.
func (w *world) runProducing(ctx context.Context, q *laxityv1alpha1.IntermittentQuery, restart time.Time, write func(ctx context.Context, from, to time.Time), each func(ctx context.Context, t time.Time)) {
	w.at(restart)
	last := windowStart
	w.runFeeding(ctx, 30*time.Minute, func(ctx context.Context, t time.Time) {
		if t.After(last) {
			write(ctx, last, t)
			last = t
		}
		if each != nil {
			each(ctx, t)
		}
		if t.Equal(restart) {
			w.es.Sources.Forget(client.ObjectKeyFromObject(q))
			fresh := &Sources{}
			w.es.Sources, w.iq.Sources = fresh, fresh
		}
	})
}
