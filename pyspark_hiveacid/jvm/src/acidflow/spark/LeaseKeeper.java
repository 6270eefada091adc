package acidflow.spark;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionEnd;

/**
 * Keeps the lease of a read alive while the SQL execution that reads it runs, and releases it
 * when that execution ends (Spark's SparkListenerSQLExecutionEnd). A lease whose read is never
 * executed (explain) or whose driver dies is not renewed and expires one TTL after it was taken,
 * as every acidflow lease does; the cleaner keeps its files until then.
 */
final class LeaseKeeper extends SparkListener {
  private static LeaseKeeper instance;

  private static final class Held {
    final Map<String, String> options;
    final double ttlSeconds;
    final String executionId;
    long renewedAt = System.nanoTime();

    Held(Map<String, String> options, double ttlSeconds, String executionId) {
      this.options = options;
      this.ttlSeconds = ttlSeconds;
      this.executionId = executionId;
    }
  }

  private final Map<Long, Held> leases = new HashMap<>();

  static synchronized void track(SparkContext sc, long leaseId, double ttlSeconds, Map<String, String> options) {
    String executionId = sc.getLocalProperty("spark.sql.execution.id");
    if (executionId == null) {
      return; // not executing (e.g. explain): the lease expires after its TTL
    }
    if (instance == null) {
      instance = new LeaseKeeper();
      sc.addSparkListener(instance);
      Thread renewer = new Thread(instance::renewLoop, "acidflow-lease-keeper");
      renewer.setDaemon(true);
      renewer.start();
    }
    synchronized (instance) {
      instance.leases.put(leaseId, new Held(new HashMap<>(options), ttlSeconds, executionId));
    }
  }

  private void renewLoop() {
    while (true) {
      try {
        Thread.sleep(1000);
      } catch (InterruptedException e) {
        return;
      }
      Map<Long, Held> due = new HashMap<>();
      synchronized (this) {
        long now = System.nanoTime();
        for (Map.Entry<Long, Held> e : leases.entrySet()) {
          if ((now - e.getValue().renewedAt) / 1e9 > e.getValue().ttlSeconds / 3) {
            due.put(e.getKey(), e.getValue());
          }
        }
      }
      for (Map.Entry<Long, Held> e : due.entrySet()) {
        ObjectNode request = Planner.request("renew", e.getValue().options);
        request.put("lease_id", e.getKey());
        request.put("ttl", e.getValue().ttlSeconds);
        try {
          Planner.get().call(request);
          e.getValue().renewedAt = System.nanoTime();
        } catch (RuntimeException failure) {
          synchronized (this) {
            leases.remove(e.getKey()); // released or expired: tasks that need its files fail
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
    String id = Long.toString(end.executionId());
    Map<Long, Held> ended = new HashMap<>();
    synchronized (this) {
      Iterator<Map.Entry<Long, Held>> it = leases.entrySet().iterator();
      while (it.hasNext()) {
        Map.Entry<Long, Held> e = it.next();
        if (e.getValue().executionId.equals(id)) {
          ended.put(e.getKey(), e.getValue());
          it.remove();
        }
      }
    }
    for (Map.Entry<Long, Held> e : ended.entrySet()) {
      ObjectNode request = Planner.request("release", e.getValue().options);
      request.put("lease_id", e.getKey());
      try {
        Planner.get().call(request);
      } catch (RuntimeException ignored) {
        // released already, or the planner is gone: the lease expires after its TTL
      }
    }
  }
}
