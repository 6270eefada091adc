package acidflow.spark;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.sql.execution.SQLExecution;
import org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionEnd;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps the lease of a read alive while the SQL execution that reads it runs, and releases it
 * when that execution ends: at once on Spark's SparkListenerSQLExecutionEnd, and at the latest on
 * the next check (every second) that finds the execution gone from Spark's running executions
 * (a listener event can be dropped under load). A lease whose read is never executed (explain),
 * whose SparkContext stopped or whose driver died is not renewed and expires one TTL after its
 * last renewal, as every acidflow lease does; the cleaner keeps its files until then.
 */
final class LeaseKeeper extends SparkListener {
  private static final Logger LOG = LoggerFactory.getLogger(LeaseKeeper.class);
  private static LeaseKeeper instance;

  private static final class Held {
    final Map<String, String> options;
    final double ttlSeconds;
    final long executionId;
    long renewedAt = System.nanoTime();

    Held(Map<String, String> options, double ttlSeconds, long executionId) {
      this.options = options;
      this.ttlSeconds = ttlSeconds;
      this.executionId = executionId;
    }
  }

  private final SparkContext context;
  private final Map<Long, Held> leases = new HashMap<>();

  private LeaseKeeper(SparkContext context) {
    this.context = context;
  }

  static synchronized void track(SparkContext sc, long leaseId, double ttlSeconds, Map<String, String> options) {
    String executionId = sc.getLocalProperty("spark.sql.execution.id");
    if (executionId == null) {
      return; // not executing (e.g. explain): the lease expires after its TTL
    }
    if (instance == null || instance.context != sc) {
      instance = new LeaseKeeper(sc); // a new SparkContext: the old keeper stops with its own
      sc.addSparkListener(instance);
      Thread renewer = new Thread(instance::renewLoop, "acidflow-lease-keeper");
      renewer.setDaemon(true);
      renewer.start();
    }
    synchronized (instance) {
      instance.leases.put(leaseId, new Held(new HashMap<>(options), ttlSeconds, Long.parseLong(executionId)));
    }
  }

  private void renewLoop() {
    while (!context.isStopped()) {
      try {
        Thread.sleep(1000);
      } catch (InterruptedException e) {
        return;
      }
      Map<Long, Held> ended = new HashMap<>();
      Map<Long, Held> due = new HashMap<>();
      synchronized (this) {
        long now = System.nanoTime();
        Iterator<Map.Entry<Long, Held>> it = leases.entrySet().iterator();
        while (it.hasNext()) {
          Map.Entry<Long, Held> e = it.next();
          if (SQLExecution.getQueryExecution(e.getValue().executionId) == null) {
            ended.put(e.getKey(), e.getValue());
            it.remove();
          } else if ((now - e.getValue().renewedAt) / 1e9 > e.getValue().ttlSeconds / 3) {
            due.put(e.getKey(), e.getValue());
          }
        }
      }
      release(ended);
      for (Map.Entry<Long, Held> e : due.entrySet()) {
        ObjectNode request = Planner.request("renew", e.getValue().options);
        request.put("lease_id", e.getKey());
        request.put("ttl", e.getValue().ttlSeconds);
        try {
          Planner.get().call(request);
          e.getValue().renewedAt = System.nanoTime();
        } catch (RuntimeException failure) {
          // Released or expired: tasks that still need its files fail instead of reading less.
          LOG.warn("hiveacid: lease {} could not be renewed: {}", e.getKey(), failure.getMessage());
          synchronized (this) {
            leases.remove(e.getKey());
          }
        }
      }
    }
  }

  @Override
  public void onOtherEvent(SparkListenerEvent event) {
    if (!(event instanceof SparkListenerSQLExecutionEnd end)) {
      return;
    }
    Map<Long, Held> ended = new HashMap<>();
    synchronized (this) {
      Iterator<Map.Entry<Long, Held>> it = leases.entrySet().iterator();
      while (it.hasNext()) {
        Map.Entry<Long, Held> e = it.next();
        if (e.getValue().executionId == end.executionId()) {
          ended.put(e.getKey(), e.getValue());
          it.remove();
        }
      }
    }
    release(ended);
  }

  private static void release(Map<Long, Held> ended) {
    for (Map.Entry<Long, Held> e : ended.entrySet()) {
      ObjectNode request = Planner.request("release", e.getValue().options);
      request.put("lease_id", e.getKey());
      try {
        Planner.get().call(request);
      } catch (RuntimeException failure) {
        // Released already, or the planner is gone: the lease expires after its TTL.
        LOG.warn("hiveacid: lease {} could not be released: {}", e.getKey(), failure.getMessage());
      }
    }
  }
}
