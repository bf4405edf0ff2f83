/** Kafka admin calls veil's neutral modules share (the control store, the subject-key topic). */
export { fetchTopicOffsetsOnceLed, type TopicOffsetsOptions } from './topic-offsets.ts';
