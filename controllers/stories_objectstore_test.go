package controllers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/sparkapp"
	"github.com/laxity-dev/laxity/test/builder"
)

// A user story: a query reads files of 500 events that land every 10
// seconds under a prefix of an S3-compatible bucket (an in-process server),
// named by the instant they cover. Every seventh file is uploaded two
// minutes late (except near the window end, which allowedLateness covers), after batches have read past its instant; files from before
// and after the window lie under the same prefix. Half-way through the
// window the operator restarts.
var _ = Describe("A query reading files from object storage", concurrent, Ordered, func() {
	const (
		bucket = "events"
		prefix = "clicks/"
		layout = "2006/01/02/15-04-05"
	)
	var (
		w *world
		// inWindow are the keys of the window's files.
		inWindow = map[string]bool{}
	)
	BeforeAll(func(ctx SpecContext) {
		w = newWorld(ctx, "objects", 2*time.Minute)
		// A bucket tells no arrival ahead: the schedule polls it.
		w.pollEvery(10 * time.Second)
		faker := gofakes3.New(s3mem.New(s3mem.WithTimeSource(w.clock)), gofakes3.WithTimeSkewLimit(0))
		server := httptest.NewServer(faker.Server())
		DeferCleanup(server.Close)
		store := s3.New(s3.Options{
			BaseEndpoint: aws.String(server.URL), Region: "eu-west-1", UsePathStyle: true,
			Credentials: credentials.NewStaticCredentialsProvider("AKIDLAXITY", "secret", ""),
		})
		_, err := store.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)})
		Expect(err).NotTo(HaveOccurred())

		w.es.Sources = &Sources{Reader: k8sClient}
		w.iq.Sources = w.es.Sources
		w.schedule = builder.Schedule(w.ns, "pool").Sizes(2, 4, 8).LeadTime(2 * time.Minute).SmallBatches().Obj()
		q := builder.Query(w.ns, "clicks").Rate("50").Slack(3 * time.Minute).Obj()
		q.Spec.Input.ObjectStore = &laxityv1alpha1.ObjectStoreInput{
			Endpoint: server.URL, Region: "eu-west-1", Bucket: bucket, Prefix: prefix, PathStyle: true,
			SecretRef: &laxityv1alpha1.SecretReference{Name: "clicks-store"}, TuplesPerObject: ptr.To[int64](500),
			KeyTimeLayout: layout, Settle: metav1.Duration{Duration: 30 * time.Second},
		}
		w.create(ctx, w.schedule, q, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "clicks-store", Namespace: w.ns},
			StringData: map[string]string{"accessKeyID": "AKIDLAXITY", "secretAccessKey": "secret"},
		})

		// Files cover 10 s each, from 2 minutes before the window to 2
		// minutes after it; file i is uploaded when its 10 s are over, or,
		// for every seventh until 3 minutes before the window end, two
		// minutes later.
		type file struct {
			key      string
			uploadAt time.Time
		}
		var files []file
		windowEnd := windowStart.Add(10 * time.Minute)
		for i, at := 0, windowStart.Add(-2*time.Minute); at.Before(windowEnd.Add(2 * time.Minute)); i, at = i+1, at.Add(10*time.Second) {
			key := prefix + at.Format(layout) + ".json"
			upload := at.Add(10 * time.Second)
			if i%7 == 3 && at.Before(windowEnd.Add(-3*time.Minute)) {
				upload = upload.Add(2 * time.Minute)
			}
			files = append(files, file{key: key, uploadAt: upload})
			w.at(upload)
			if !at.Before(windowStart) && at.Before(windowEnd) {
				inWindow[key] = true
			}
		}
		// Each file goes up on the tick at its upload instant (at).
		put := func(ctx context.Context, now time.Time) {
			for _, f := range files {
				if f.uploadAt.Equal(now) {
					_, err := store.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(f.key), Body: bytes.NewReader([]byte("events"))})
					Expect(err).NotTo(HaveOccurred())
				}
			}
		}

		restart := windowStart.Add(5 * time.Minute)
		w.at(restart)
		w.runFeeding(ctx, 30*time.Minute, func(ctx context.Context, t time.Time) {
			put(ctx, t)
			if t.Equal(restart) {
				fresh := &Sources{Reader: k8sClient}
				w.es.Sources, w.iq.Sources = fresh, fresh
			}
		})
		w.report(ctx)
	})

	It("runs the query to completion before its deadline", func(ctx SpecContext) {
		q := w.finishedInTime(ctx, "clicks")
		Expect(*q.Status.ArrivedTuples).To(Equal(int64(500 * len(inWindow))))
	})

	It("reads every file of the window exactly once, late ones flagged, across the restart", func(ctx SpecContext) {
		apps := sparkapp.NewList()
		Expect(k8sClient.List(ctx, apps, client.InNamespace(w.ns), client.MatchingLabels{LabelStep: string(planner.StepBatch)})).To(Succeed())
		read := map[string]int{}
		late := 0
		for i := range apps.Items {
			_, step, err := sparkapp.StepOf(&apps.Items[i])
			Expect(err).NotTo(HaveOccurred())
			var keys, lateKeys []string
			Expect(json.Unmarshal([]byte(step.Slice["objectstore-keys"]), &keys)).To(Succeed(), apps.Items[i].GetName())
			Expect(json.Unmarshal([]byte(step.Slice["objectstore-late"]), &lateKeys)).To(Succeed())
			Expect(apps.Items[i].GetAnnotations()).To(HaveKeyWithValue("laxity.dev/late", fmt.Sprint(500*len(lateKeys))), "the late events' count")
			Expect(int64(500*len(keys))).To(Equal(step.ToTuple-step.FromTuple), "%s reads as many tuples as its range", apps.Items[i].GetName())
			for _, k := range keys {
				read[k]++
			}
			late += len(lateKeys)
		}
		Expect(len(apps.Items)).To(BeNumerically(">", 2))
		Expect(late).To(BeNumerically(">", 0), "some files arrived after batches read past their instant")
		for k := range inWindow {
			Expect(read[k]).To(Equal(1), "file %s", k)
		}
		for k := range read {
			Expect(inWindow).To(HaveKey(k), fmt.Sprintf("%s is outside the window", k))
		}
	})
})
