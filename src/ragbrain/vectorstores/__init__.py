"""A caller's langchain-chroma ``Chroma`` under the whole pipeline (``wrap``:
``CorrectiveRetriever.from_vectorstore``, its gate in ``gate``). The other way round, a
ragbrain store as a ``Chroma``, is ``Store.as_vectorstore`` (``ragbrain.store.vectorstore``)."""
