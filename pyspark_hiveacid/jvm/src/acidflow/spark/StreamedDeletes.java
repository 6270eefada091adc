package acidflow.spark;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;

/**
 * The overriding events of one bucket streamed from their files in key order (Hive's
 * SortMergedDeleteEventRegistry), for a delete set too large to hold
 * ({@code spark.acidflow.deleteEventsInMemory}): a k-way merge holding one batch per file.
 *
 * <p>Rows are asked in key order (each data file is sorted); when a row's key is below the last
 * one asked (the next data file starts lower), every file is opened again from its start.
 */
final class StreamedDeletes implements RowHider, AutoCloseable {
  /** Opens one source's events from the start. */
  interface Opener {
    OverridingEvents open() throws IOException;
  }

  private final List<Opener> openers;
  private final List<OverridingEvents> open = new ArrayList<>();
  private PriorityQueue<OverridingEvents> heap;
  private boolean group;
  private long go;
  private long gb;
  private long gr;
  private long gh;
  private boolean asked;
  private long lo;
  private long lb;
  private long lr;
  int restarts;

  StreamedDeletes(List<Opener> openers) {
    this.openers = openers;
  }

  @Override
  public boolean hidden(long o, long b, long r, long current) {
    try {
      if (heap == null || (asked && DeleteRegistry.compareKeys(o, b, r, lo, lb, lr) < 0)) {
        restart();
      }
      asked = true;
      lo = o;
      lb = b;
      lr = r;
      while (group && DeleteRegistry.compareKeys(go, gb, gr, o, b, r) < 0) {
        nextGroup();
      }
      return group && go == o && gb == b && gr == r && current < gh;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private void restart() throws IOException {
    if (heap != null) {
      restarts++;
    }
    close();
    heap =
        new PriorityQueue<>(
            Math.max(1, openers.size()), (x, y) -> DeleteRegistry.compareKeys(x.o, x.b, x.r, y.o, y.b, y.r));
    for (Opener opener : openers) {
      OverridingEvents events = opener.open();
      open.add(events);
      if (events.next()) {
        heap.add(events);
      }
    }
    nextGroup();
  }

  /** The next key of the merge and the largest hide value among its events. */
  private void nextGroup() throws IOException {
    OverridingEvents first = heap.poll();
    if (first == null) {
      group = false;
      return;
    }
    group = true;
    go = first.o;
    gb = first.b;
    gr = first.r;
    gh = first.hide;
    advance(first);
    while (!heap.isEmpty()) {
      OverridingEvents same = heap.peek();
      if (same.o != go || same.b != gb || same.r != gr) {
        break;
      }
      heap.poll();
      gh = Math.max(gh, same.hide);
      advance(same);
    }
  }

  private void advance(OverridingEvents events) throws IOException {
    if (events.next()) {
      heap.add(events);
    }
  }

  @Override
  public void close() throws IOException {
    IOException failure = null;
    for (OverridingEvents events : open) {
      try {
        events.close();
      } catch (IOException e) {
        failure = e;
      }
    }
    open.clear();
    if (failure != null) {
      throw failure;
    }
  }
}
