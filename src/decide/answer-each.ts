/**
 * `answer` applied to every item, with `recover` answering an item that throws or rejects; stays
 * synchronous unless some item has to wait, so a bulk answered from caches costs no promise.
 */
export function answerEach<Item, Answer>(
  items: readonly Item[],
  answer: (item: Item, index: number) => Answer | Promise<Answer>,
  recover: (error: unknown) => Answer,
): Answer[] | Promise<Answer[]> {
  let waiting = false;
  const answers = items.map((item, index) => {
    let answered: Answer | Promise<Answer>;
    try {
      answered = answer(item, index);
    } catch (error) {
      return recover(error);
    }
    if (answered instanceof Promise) {
      waiting = true;
      return answered.catch(recover);
    }
    return answered;
  });
  return waiting ? Promise.all(answers) : (answers as Answer[]);
}
