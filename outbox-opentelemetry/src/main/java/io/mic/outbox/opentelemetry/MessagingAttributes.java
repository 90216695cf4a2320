package io.mic.outbox.opentelemetry;

import io.opentelemetry.api.common.AttributeKey;

/**
 * The attributes of the OpenTelemetry semantic conventions for messaging that the spans carry, spelled
 * out here so that this module needs the OpenTelemetry API alone.
 */
final class MessagingAttributes {
  static final AttributeKey<String> SYSTEM = AttributeKey.stringKey("messaging.system");
  static final AttributeKey<String> DESTINATION_NAME = AttributeKey.stringKey("messaging.destination.name");
  static final AttributeKey<String> MESSAGE_ID = AttributeKey.stringKey("messaging.message.id");
  static final AttributeKey<String> OPERATION_NAME = AttributeKey.stringKey("messaging.operation.name");
  static final AttributeKey<String> OPERATION_TYPE = AttributeKey.stringKey("messaging.operation.type");
  static final AttributeKey<String> ERROR_TYPE = AttributeKey.stringKey("error.type");

  /** The operation name of a publication, and the first word of its span name. */
  static final String PUBLISH = "publish";
  /** The operation type of a publication: one or more messages handed to the broker. */
  static final String SEND = "send";
  /** The operation name and type of a consumer handling a message. */
  static final String PROCESS = "process";

  private MessagingAttributes() {}
}
