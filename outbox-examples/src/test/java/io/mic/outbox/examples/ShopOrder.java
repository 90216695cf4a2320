package io.mic.outbox.examples;

import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Table;

/** The JPA entity of the recipe in docs/integrations.md; the table is {@link IntegrationSamples#ORDERS_DDL}. */
@Entity
@Table(name = "shop_order")
public class ShopOrder {
  @Id
  private String id;
  private long total;

  protected ShopOrder() {}

  public ShopOrder(String id, long total) {
    this.id = id;
    this.total = total;
  }

  public String id() {
    return id;
  }

  public long total() {
    return total;
  }
}
