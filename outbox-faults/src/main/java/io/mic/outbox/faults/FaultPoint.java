package io.mic.outbox.faults;

import java.util.Locale;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A place in the dispatch path where a worker process stops so the test can kill it: the worker prints
 * {@code AT <point>} on stdout and parks the thread that got there, holding whatever it holds (claimed
 * rows, an open transaction), until the test sends SIGKILL.
 */
public enum FaultPoint {
  NONE,
  /** The claim committed; nothing of the batch was published. */
  AFTER_CLAIM,
  /** The sink took an event (the broker has it); the dispatcher has not seen the acknowledgement. */
  AFTER_PUBLISH_BEFORE_ACK,
  /** Every publication of the batch was acknowledged; the mark was not sent. */
  AFTER_ACK_BEFORE_MARK,
  /** The mark's UPDATE ran in its transaction; the commit was not sent. */
  DURING_MARK;

  private final AtomicInteger reached = new AtomicInteger();
  private volatile int fireAt = Integer.MAX_VALUE;

  /** The name on the command line and in {@code AT} lines, e.g. {@code after-claim}. */
  public String label() {
    return name().toLowerCase(Locale.ROOT).replace('_', '-');
  }

  public static FaultPoint parse(String label) {
    return valueOf(label.toUpperCase(Locale.ROOT).replace('-', '_'));
  }

  /** Arms this point: the {@code n}-th time a thread reaches it, that thread parks. */
  void arm(int n) {
    fireAt = n;
  }

  /** Called where the point is in the code; parks for good if this is the armed occurrence. */
  void reach() {
    if (this != NONE && reached.incrementAndGet() == fireAt) {
      System.out.println("AT " + label());
      System.out.flush();
      parkForever();
    }
  }

  static void parkForever() {
    Object never = new Object();
    synchronized (never) {
      while (true) {
        try {
          never.wait();
        } catch (InterruptedException e) {
          // the test kills the process; an interrupt (close()) must not let the thread go on
        }
      }
    }
  }
}
