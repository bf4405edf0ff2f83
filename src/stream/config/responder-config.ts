import { z } from 'zod';
import { topicNameSchema } from './pipeline-config.ts';

/** One entry of the configuration's `responders` section: unprotect on demand over Kafka, requests on one topic, replies only to allowed topics. */
export const responderSchema = z.strictObject({
  description: z.string().optional(),
  requestTopic: topicNameSchema,
  /** the reply-to topics a request may name; anything else is refused (never written to) */
  replyTopics: z.array(topicNameSchema).min(1),
  /** refused requests that cannot be answered (no or disallowed reply-to) land here, without values */
  deadLetterTopic: topicNameSchema,
  groupId: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,200}$/)
    .optional(),
});

export type ResponderConfig = z.infer<typeof responderSchema>;
